import GRDB

/// Why a live query could not open, or what went wrong while it followed the database. Surfaced
/// as values: the last good result stays displayed. Database failures keep GRDB's
/// `DatabaseError` — its result code, SQL and arguments — so callers match them as GRDB users do:
///
/// ```swift
/// import GRDB
/// import LiveQuery
///
/// func isBusy(_ error: LiveQueryError) -> Bool {
///     error.databaseError?.resultCode == .SQLITE_BUSY
/// }
/// ```
public enum LiveQueryError: Error, Sendable, CustomStringConvertible {
    /// The table does not exist.
    case unknownTable(String)
    /// A sort, section, version or identity column does not exist in the table.
    case unknownColumn(table: String, column: String)
    /// SQLite rejected the SQL (the request's, or a filter's): the error carries the statement,
    /// its arguments and SQLite's message.
    case invalidSQL(DatabaseError)
    /// The request cannot be followed as given; the case says why and what to do.
    case invalidRequest(InvalidRequest)
    /// The database stayed busy or locked through every retry.
    case databaseBusy(DatabaseError)
    /// The database file was removed, or the connection was closed. The query has stopped.
    case databaseGone(String)
    /// Another file now sits at the database's path (it was deleted and created again, or
    /// replaced by a rename): the connection still reads the old one. The query has stopped;
    /// reopen the database and the query.
    case databaseReplaced(path: String)
    /// The schema changed under the query: a statement that compiled when the query opened does
    /// not compile any more (a column or table it reads was dropped or renamed).
    case schemaChanged(DatabaseError)
    /// The change log (``ChangeTracking``) could not be read — dropped or altered by hand: other
    /// connections' commits are refetched from now on.
    case changeLogUnavailable(String)
    /// Any other SQLite error, with the statement that failed.
    case database(DatabaseError)
    /// An error that did not come from SQLite (thrown by a GRDB request's own code, for example).
    case underlying(any Error)

    public var description: String {
        switch self {
        case let .unknownTable(table): "no such table: \(table)"
        case let .unknownColumn(table, column): "no such column: \(table).\(column)"
        case let .invalidSQL(error): "invalid SQL (\(error.message ?? "\(error.resultCode)"))" + Self.statement(error)
        case let .invalidRequest(reason): "invalid live query: \(reason)"
        case let .databaseBusy(error): "database busy: \(error.message ?? "\(error.resultCode)")"
        case let .databaseGone(reason): "database gone: \(reason)"
        case let .databaseReplaced(path): "database replaced: another file is now at \(path); reopen it"
        case let .schemaChanged(error): "schema changed under the live query: \(error.message ?? "\(error.resultCode)")" + Self.statement(error)
        case let .changeLogUnavailable(reason): "the change log cannot be read (\(reason)); other connections' commits are refetched"
        case let .database(error): "database error (\(error.message ?? "\(error.resultCode)"))" + Self.statement(error)
        case let .underlying(error): "\(error)"
        }
    }

    private static func statement(_ error: DatabaseError) -> String {
        guard let sql = error.sql else { return "" }
        return ": \(sql)" + (error.arguments.map { $0.isEmpty ? "" : " with arguments \($0)" } ?? "")
    }

    /// The SQLite error behind this one, with its result code, SQL and arguments; `nil` when it
    /// did not come from SQLite.
    public var databaseError: DatabaseError? {
        switch self {
        case let .invalidSQL(error), let .databaseBusy(error), let .schemaChanged(error), let .database(error): error
        default: nil
        }
    }

    /// Whether the query stopped following the database because of this error.
    public var isTerminal: Bool {
        switch self {
        case .databaseGone, .databaseReplaced: true
        default: false
        }
    }

    /// Whether retrying the same work later may succeed.
    var isBusy: Bool {
        if case .databaseBusy = self { return true }
        return false
    }

    /// Classifies an error thrown by GRDB while running `sql` with `arguments`: by SQLite's result
    /// codes only (never by its message).
    static func from(_ error: any Error, sql: String?, arguments: StatementArguments? = nil) -> LiveQueryError {
        if let error = error as? LiveQueryError { return error }
        guard var error = error as? DatabaseError else { return .underlying(error) }
        if error.sql == nil, let sql {
            error = DatabaseError(resultCode: error.extendedResultCode, message: error.message, sql: sql, arguments: arguments)
        }
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .databaseBusy(error)
        case .SQLITE_SCHEMA: return .schemaChanged(error)
        // GRDB reports a closed connection as a misuse.
        case .SQLITE_MISUSE: return .databaseGone(error.message ?? "the connection is closed")
        case .SQLITE_READONLY where error.extendedResultCode == .SQLITE_READONLY_DBMOVED:
            return .databaseGone(error.message ?? "the database file was moved")
        default: return .database(error)
        }
    }

    /// Classifies a failure to compile `sql`: SQLite's own error with the statement.
    static func invalidSQL(_ error: any Error, sql: String, arguments: StatementArguments) -> LiveQueryError {
        guard let error = error as? DatabaseError else { return from(error, sql: sql, arguments: arguments) }
        return .invalidSQL(DatabaseError(resultCode: error.extendedResultCode, message: error.message, sql: error.sql ?? sql,
                                         arguments: error.arguments ?? arguments))
    }
}
