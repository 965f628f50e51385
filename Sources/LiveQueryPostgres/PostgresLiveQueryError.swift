import PostgresNIO

/// Why a PostgreSQL live query could not open or stopped following the database: each case says
/// what to do.
public enum PostgresLiveQueryError: Error, Sendable, CustomStringConvertible {
    /// No such table (as PostgreSQL resolves the name with the connection's search path).
    case unknownTable(String)
    /// The table has no such column.
    case unknownColumn(table: String, column: String)
    /// The identity named cannot identify the table's rows — only its single-column primary key
    /// or a NOT NULL column with a unique index on it alone can — or, with no identity named, the
    /// table has no single-column primary key to identify them by. `fix` says what to change.
    case identityNotUnique(table: String, identity: String?, fix: String)
    /// The identity's values cannot be held by the declared identity type.
    case identityTypeMismatch(column: String, declared: String)
    /// The section must be the first sort term's column.
    case sectionNotFirstSortTerm(String)
    /// A refetched SELECT (`why` it is refetched) identifies its rows by one of its result
    /// `columns`, and `identity` names none of them, names several, or names one of a type that
    /// cannot identify rows (`type`).
    case identityNotInResult(identity: String, columns: [String], type: String?, why: String)
    /// The table is partitioned, and the publication sends its partitions' changes under their
    /// own names: `ALTER PUBLICATION name SET (publish_via_partition_root = true)`.
    case partitionsNotPublishedViaRoot(table: String)
    /// The server runs with `wal_level` below `logical`: set `wal_level = logical` and restart it.
    case logicalDecodingUnavailable(walLevel: String)
    /// The publication does not exist and could not be created (`CREATE PUBLICATION name FOR ALL
    /// TABLES` needs a superuser; `FOR TABLE t` its owner).
    case publicationMissing(String, PSQLError?)
    /// The table is not in the publication: `ALTER PUBLICATION name ADD TABLE table`.
    case tableNotPublished(table: String, publication: String)
    /// The publication leaves some of the table's changes out (deletes, say, or rows outside a
    /// row filter, or columns outside a column list): a list would miss them. Publish them all.
    case publicationOmitsChanges(table: String, publication: String, omitted: String)
    /// The replication slot could not be created or used (the role needs REPLICATION, or
    /// `max_replication_slots` is reached).
    case replicationSlot(String, PostgresReplicationFailure)
    /// The replication connection failed or went silent: the engine connects again, less and less
    /// often up to once a second, and its queries go on from where they were (a persistent slot)
    /// or read their results again (a temporary one, lost with its connection).
    case replicationStream(PostgresReplicationFailure)
    /// The replication slot is gone (dropped by someone, or a temporary slot lost with its
    /// connection): commits may have been missed, so every query refetches once a new slot is taken.
    case slotLost(String)
    /// The change stream holds a message this engine cannot read.
    case malformedChange(String)
    /// The server said no: its error, with its SQLSTATE (`error.serverInfo?[.sqlState]`).
    case server(PSQLError, sql: String)
    /// The server refused a statement the engine prepared on its connection (a round's re-reads
    /// and lookups): its message and SQLSTATE.
    case refused(PostgresStatementFailure, sql: String)
    /// A statement took longer than the database's timeout: its connection was closed, and the
    /// next round opens a new one.
    case timedOut(sql: String, after: Duration)
    /// The connection is closed, or the live database was closed.
    case connectionClosed
    /// A PostgreSQL URL that does not say how to connect.
    case invalidURL(String, reason: String)
    /// Something else went wrong.
    case underlying(any Error)

    /// What went wrong and what to do, in one sentence.
    public var description: String {
        switch self {
        case let .unknownTable(table): "no such table: \(table)"
        case let .unknownColumn(table, column): "no such column: \(table).\(column)"
        case let .identityNotUnique(table, identity, fix):
            if let identity {
                "\(identity) cannot identify the rows of \(table) (its single-column primary key, or a NOT NULL column with a unique "
                    + "index on it alone, can): \(fix)"
            } else {
                "\(table) has no single-column primary key to identify its rows by: \(fix)"
            }
        case let .identityTypeMismatch(column, declared): "\(column)'s values are not \(declared)s: declare the identity type that holds them"
        case let .sectionNotFirstSortTerm(section): "the section \(section) must be the first sort term's column"
        case let .identityNotInResult(identity, columns, type, why):
            "the query is refetched (\(why)), so it identifies its rows by a column of its result, by name: "
                + Self.identityInResultFix(identity, columns: columns, type: type)
        case let .partitionsNotPublishedViaRoot(table):
            "\(table) is partitioned and the publication names its partitions' changes by partition: "
                + "ALTER PUBLICATION … SET (publish_via_partition_root = true)"
        case let .logicalDecodingUnavailable(level):
            "wal_level is \(level): set wal_level = logical in postgresql.conf and restart PostgreSQL"
        case let .publicationMissing(name, error):
            "publication \(name) is missing" + (error.map { " and could not be created (\(Self.message($0)))" } ?? "")
                + ": CREATE PUBLICATION \(name) FOR ALL TABLES"
        case let .tableNotPublished(table, publication): "\(table) is not in publication \(publication): ALTER PUBLICATION \(publication) ADD TABLE \(table)"
        case let .publicationOmitsChanges(table, publication, omitted):
            "publication \(publication) leaves out \(omitted) of \(table), which a list would miss: publish every change of it "
                + "(ALTER PUBLICATION \(publication) SET (publish = 'insert, update, delete, truncate'); no row filter or column list)"
        case let .replicationSlot(slot, failure):
            "replication slot \(slot): \(failure) (\(Self.slotHint(failure.sqlState)))"
        case let .replicationStream(failure): "the replication stream failed: \(failure)"
        case let .slotLost(slot): "replication slot \(slot) is gone: a new one is taken and every query refetches"
        case let .malformedChange(detail): "unreadable change from logical decoding: \(detail)"
        case let .server(error, sql): "PostgreSQL: \(Self.message(error)) in \(sql)"
        case let .refused(failure, sql): "PostgreSQL: \(failure) in \(sql)"
        case let .timedOut(sql, after): "no answer from PostgreSQL within \(after) to \(sql); the connection was closed"
        case .connectionClosed: "the connection to PostgreSQL is closed"
        case let .invalidURL(url, reason): "\(url) is not a PostgreSQL URL: \(reason)"
        case let .underlying(error): "\(error)"
        }
    }

    /// What to change for a refetched query's identity `identity` among its result's `columns`.
    private static func identityInResultFix(_ identity: String, columns: [String], type: String?) -> String {
        let named = columns.filter { $0 == identity }.count
        let listed = columns.joined(separator: ", ")
        if let type, named == 1 {
            return "\(identity) is of type \(type), which cannot identify rows: name with identity a column of integers, text, uuid, "
                + "bytea, numeric, boolean, floating point, date or timestamp (its columns: \(listed))"
        }
        if named > 1 {
            return "\(named) of its columns are named \(identity): give the one that identifies rows a name of its own "
                + "(… AS \(identity)_key) and name that with identity"
        }
        return "none of its columns (\(listed)) is named \(identity): select it, or name with identity the result column that "
            + "is unique in every row, by its name in the result (its alias, when it has one)"
    }

    /// The server's message (with its detail, when asked for) and SQLSTATE, or the client's error.
    package static func message(_ error: PSQLError, withDetail: Bool = false) -> String {
        guard let info = error.serverInfo, let message = info[.message] else { return "\(error.code)" }
        let detail = withDetail ? info[.detail].map { ": \($0)" } ?? "" : ""
        return message + detail + (info[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
    }

    /// Whether the connection is gone (no answer, closed, or the server shutting down or
    /// refusing connections), as opposed to a statement the server refused.
    var isLostConnection: Bool {
        switch self {
        case .timedOut, .connectionClosed, .replicationStream, .slotLost: return true
        case .server, .refused:
            guard let state = sqlState else { return true }
            return state.hasPrefix("08") || state.hasPrefix("57")
        default: return false
        }
    }

    /// Whether the statement was refused for a reason that is not its query's, never its query's
    /// own failure: its transaction had failed already (SQLSTATE 25P02: it was sent behind another
    /// that failed), or it was prepared before its tables changed shape or the server lost it
    /// (``PostgresStatementFailure/isOutdated``: it is prepared again). Its work waits for the next
    /// round.
    var isTransient: Bool {
        if case let .refused(failure, _) = self, failure.isOutdated { return true }
        return sqlState == "25P02"
    }

    /// The SQLSTATE of a server error, to match on (`42P01`: undefined table…).
    public var sqlState: String? {
        switch self {
        case let .server(error, _): error.serverInfo?[.sqlState]
        case let .refused(failure, _): failure.sqlState
        case let .replicationSlot(_, failure), let .replicationStream(failure): failure.sqlState
        case let .publicationMissing(_, error): error?.serverInfo?[.sqlState]
        default: nil
        }
    }
}

extension PostgresLiveQueryError {
    /// What to look at when a slot cannot be made or taken up, by the server's SQLSTATE: a slot in
    /// use (another instance streams it, or PostgreSQL has not yet noticed that a stream it
    /// served is gone) is not a missing privilege.
    static func slotHint(_ sqlState: String?) -> String {
        switch sqlState {
        case "42710", "55006":
            "another connection holds the slot: another instance given the same slot, or a stream PostgreSQL has not let go yet"
        case "42501": "the role needs the REPLICATION attribute"
        case "53400": "every slot or WAL sender is taken: raise max_replication_slots or max_wal_senders, or drop unused slots"
        default: "the role needs the REPLICATION attribute; see max_replication_slots and max_wal_senders"
        }
    }
}
