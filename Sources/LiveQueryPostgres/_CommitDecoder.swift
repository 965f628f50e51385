/// A committed transaction as a live query needs it: which keys of which relations it touched.
struct _DecodedCommit: Sendable, Equatable {
    var xid: UInt32
    var commitLSN: PostgresLSN
    var endLSN: PostgresLSN
    /// Per relation OID, the key tuples (text form of the relation's key columns) of the rows
    /// the transaction inserted, updated (old and new key) or deleted.
    var touched: [UInt32: [[_PgTupleValue]]] = [:]
    /// Relations the transaction truncated.
    var truncated: Set<UInt32> = []
    /// Relations whose shape (columns, key, types) differs from what was known before.
    var reshaped: Set<UInt32> = []
}

/// Groups `pgoutput` messages into committed transactions and keeps the relations they name.
/// A value: fed in WAL order, without I/O.
struct _CommitDecoder: Sendable {
    private(set) var relations: [UInt32: _PgRelation]
    private var open: _DecodedCommit?

    init(relations: [UInt32: _PgRelation] = [:]) { self.relations = relations }

    /// Feeds one message; returns the transaction it completes.
    mutating func feed(_ message: _PgOutputMessage) throws(_PgOutputFormatError) -> _DecodedCommit? {
        switch message {
        case let .begin(final, xid):
            open = _DecodedCommit(xid: xid, commitLSN: final, endLSN: final)
        case let .commit(commitLSN, endLSN):
            guard var done = open else { throw _PgOutputFormatError(detail: "commit outside a transaction") }
            done.commitLSN = commitLSN
            done.endLSN = endLSN
            open = nil
            return done
        case let .relation(relation):
            if let known = relations[relation.oid], known != relation { open?.reshaped.insert(relation.oid) }
            relations[relation.oid] = relation
        case let .insert(oid, new):
            try touch(oid, new)
        case let .update(oid, old, new):
            if let old { try touch(oid, old) }
            try touch(oid, new)
        case let .delete(oid, old):
            try touch(oid, old)
        case let .truncate(oids):
            open?.truncated.formUnion(oids)
        case .other:
            break
        }
        return nil
    }

    private mutating func touch(_ oid: UInt32, _ tuple: [_PgTupleValue]) throws(_PgOutputFormatError) {
        guard let relation = relations[oid] else { throw _PgOutputFormatError(detail: "a change to relation \(oid) before its description") }
        guard tuple.count == relation.columns.count else {
            throw _PgOutputFormatError(detail: "\(tuple.count) values for the \(relation.columns.count) columns of \(relation.name)")
        }
        var key: [_PgTupleValue] = []
        for (column, value) in zip(relation.columns, tuple) where column.isKey { key.append(value) }
        open?.touched[oid, default: []].append(key)
    }
}
