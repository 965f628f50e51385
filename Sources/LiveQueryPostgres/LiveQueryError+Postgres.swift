import LiveQueryCore

extension LiveQueryError {
    /// A PostgreSQL live query's failure in the terms every engine shares: the server's own
    /// errors as ``LiveQueryError/database(_:)`` (a statement that timed out as
    /// ``LiveQueryError/databaseBusy(_:)``), missing tables and columns as such, and the rest —
    /// the replication stream, the slot, the publication — as ``LiveQueryError/underlying(_:)``.
    /// The PostgreSQL error itself stays reachable as ``postgresError``.
    package init(_ error: PostgresLiveQueryError) {
        switch error {
        case let .unknownTable(table): self = .unknownTable(table)
        case let .unknownColumn(table, column): self = .unknownColumn(table: table, column: column)
        case let .server(server, sql):
            self = .database(DatabaseFailure(error, message: "PostgreSQL: \(PostgresLiveQueryError.message(server))", sql: sql))
        case let .refused(failure, sql):
            self = .database(DatabaseFailure(error, message: "PostgreSQL: \(failure)", sql: sql))
        case let .timedOut(sql, after):
            self = .databaseBusy(DatabaseFailure(error, message: "no answer from PostgreSQL within \(after)", sql: sql))
        default: self = .underlying(error)
        }
    }

    /// The PostgreSQL live query's own error behind this one; `nil` when it came from another
    /// engine.
    public var postgresError: PostgresLiveQueryError? {
        if case let .underlying(error) = self { return error as? PostgresLiveQueryError }
        return databaseFailure?.error as? PostgresLiveQueryError
    }
}
