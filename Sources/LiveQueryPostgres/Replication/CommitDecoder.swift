/// A committed transaction as a live query needs it: which keys of which relations it touched.
package struct DecodedCommit: Sendable, Equatable {
    package var xid: UInt32
    package var commitLSN: PostgresLSN
    package var endLSN: PostgresLSN
    /// Per relation OID, the key tuples (text form of the relation's key columns) of the rows
    /// the transaction inserted, updated (old and new key) or deleted.
    package var touched: [UInt32: [[PostgresTupleValue]]] = [:]
    /// Relations the transaction truncated.
    package var truncated: Set<UInt32> = []
    /// The relations the stream described in the transaction (before their first change in the
    /// stream's session, and again after their shape changed), in order.
    package var described: [PostgresRelation] = []
    /// Relations whose shape (columns, key, types) differs from what the engine knew before: set
    /// by ``KnownRelations/absorb(_:)`` as the engine takes the commit.
    package var reshaped: Set<UInt32> = []

    /// Every relation the transaction changed, truncated or reshaped.
    package var relations: Set<UInt32> { truncated.union(reshaped).union(touched.keys) }
}

/// Groups `pgoutput` messages into committed transactions, with the key columns of their
/// changes, as the replication stream's session describes the relations. A value: fed in WAL
/// order, without I/O (`PgOutputTests`). A new session describes every relation again before its
/// first change, so a decoder is made for each. `package`: the replication fuzz target feeds one.
package struct CommitDecoder: Sendable {
    package private(set) var relations: [UInt32: PostgresRelation] = [:]
    private var open: DecodedCommit?
    /// Relations described outside a transaction, kept for the next one.
    private var describedBefore: [PostgresRelation] = []

    package init() {}

    /// Feeds one message; returns the transaction it completes.
    package mutating func feed(_ message: PgOutputMessage) throws(PgOutputFormatError) -> DecodedCommit? {
        switch message {
        case let .begin(final, xid):
            guard open == nil else { throw PgOutputFormatError(detail: "a transaction begins inside another") }
            open = DecodedCommit(xid: xid, commitLSN: final, endLSN: final, described: describedBefore)
            describedBefore = []
        case let .commit(commitLSN, endLSN):
            guard var done = open else { throw PgOutputFormatError(detail: "commit outside a transaction") }
            done.commitLSN = commitLSN
            done.endLSN = endLSN
            open = nil
            return done
        case let .relation(relation):
            relations[relation.oid] = relation
            if open != nil { open?.described.append(relation) } else { describedBefore.append(relation) }
        case let .insert(oid, new):
            try touch(oid, new)
        case let .update(oid, old, new):
            if let old { try touch(oid, old) }
            try touch(oid, new)
        case let .delete(oid, old):
            try touch(oid, old)
        case let .truncate(oids):
            guard open != nil else { throw PgOutputFormatError(detail: "truncate outside a transaction") }
            open?.truncated.formUnion(oids)
        case .other:
            break
        }
        return nil
    }

    private mutating func touch(_ oid: UInt32, _ tuple: [PostgresTupleValue]) throws(PgOutputFormatError) {
        guard open != nil else { throw PgOutputFormatError(detail: "a change outside a transaction") }
        guard let relation = relations[oid] else { throw PgOutputFormatError(detail: "a change to relation \(oid) before its description") }
        guard tuple.count == relation.columns.count else {
            throw PgOutputFormatError(detail: "\(tuple.count) values for the \(relation.columns.count) columns of \(relation.name)")
        }
        var key: [PostgresTupleValue] = []
        for (column, value) in zip(relation.columns, tuple) where column.isKey { key.append(value) }
        open?.touched[oid, default: []].append(key)
    }
}

/// The shapes of the relations the engine follows, as planned when queries opened and as the
/// stream described them since: a description that differs is a schema change. A value, tested
/// without I/O.
package struct KnownRelations: Sendable {
    package private(set) var shapes: [UInt32: PostgresRelation] = [:]

    package init() {}

    /// Notes a shape read from the catalog (a query planned against it), unless one is known.
    package mutating func planned(_ relation: PostgresRelation) {
        if shapes[relation.oid] == nil { shapes[relation.oid] = relation }
    }

    /// Takes the commit's descriptions: marks the relations whose shape changed as `reshaped`.
    package mutating func absorb(_ commit: inout DecodedCommit) {
        for relation in commit.described {
            if let known = shapes[relation.oid], known != relation { commit.reshaped.insert(relation.oid) }
            shapes[relation.oid] = relation
        }
    }

    subscript(oid: UInt32) -> PostgresRelation? { shapes[oid] }
}
