import GRDB
import LiveQueryCore

extension LiveQueryError {
    /// The SQLite error behind this one, with its result code, SQL and arguments; `nil` when it
    /// did not come from SQLite.
    public var databaseError: DatabaseError? {
        databaseFailure?.error as? DatabaseError
    }

    /// Classifies an error thrown by GRDB while running `sql` with `arguments`: by SQLite's result
    /// codes only (never by its message).
    package static func from(_ error: any Error, sql: String?, arguments: StatementArguments? = nil) -> LiveQueryError {
        if let error = error as? LiveQueryError { return error }
        guard var error = error as? DatabaseError else { return .underlying(error) }
        if error.sql == nil, let sql {
            error = DatabaseError(resultCode: error.extendedResultCode, message: error.message, sql: sql, arguments: arguments)
        }
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .databaseBusy(DatabaseFailure(error))
        case .SQLITE_SCHEMA: return .schemaChanged(DatabaseFailure(error))
        // GRDB reports a closed connection as a misuse.
        case .SQLITE_MISUSE: return .databaseGone(error.message ?? "the connection is closed")
        case .SQLITE_READONLY where error.extendedResultCode == .SQLITE_READONLY_DBMOVED:
            return .databaseGone(error.message ?? "the database file was moved")
        default: return .database(DatabaseFailure(error))
        }
    }

    /// Classifies a failure to compile `sql`: SQLite's own error with the statement.
    package static func invalidSQL(_ error: any Error, sql: String, arguments: StatementArguments) -> LiveQueryError {
        guard let error = error as? DatabaseError else { return from(error, sql: sql, arguments: arguments) }
        return .invalidSQL(DatabaseFailure(DatabaseError(resultCode: error.extendedResultCode, message: error.message,
                                                         sql: error.sql ?? sql, arguments: error.arguments ?? arguments)))
    }
}

extension DatabaseFailure {
    /// SQLite's error as GRDB threw it, with its message (or result code), statement and
    /// arguments.
    package init(_ error: DatabaseError) {
        self.init(error, message: error.message ?? "\(error.resultCode)", sql: error.sql,
                  arguments: error.arguments.flatMap { $0.isEmpty ? nil : "\($0)" })
    }
}
