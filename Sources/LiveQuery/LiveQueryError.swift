import GRDB

/// Why a live query could not open, or what went wrong while it followed the database. Surfaced
/// as values: the last good result stays displayed. Errors that come from a statement carry its
/// SQL and arguments, as GRDB's `DatabaseError` does.
public enum LiveQueryError: Error, Sendable, CustomStringConvertible {
    /// The table does not exist.
    case unknownTable(String)
    /// A sort, section, version or identity column does not exist in the table.
    case unknownColumn(table: String, column: String)
    /// The filter (or another part of the generated SQL) is not valid SQL.
    case invalidSQL(sql: String, arguments: StatementArguments, message: String)
    /// The request is inconsistent (for example, sections that are not the first sort term).
    case invalidRequest(String)
    /// A row's identity value cannot be decoded as the request's identity type: the row is left
    /// out of the result.
    case invalidIdentity(value: SQLValue, type: String)
    /// Several rows share an identity value: the first one is shown, the others are left out.
    case duplicateIdentity(SQLValue)
    /// The database stayed busy or locked through every retry.
    case databaseBusy(message: String)
    /// The database file was removed, or the connection was closed. The query has stopped.
    case databaseGone(String)
    /// Another file now sits at the database's path (it was deleted and created again, or
    /// replaced by a rename): the connection still reads the old one. The query has stopped;
    /// reopen the database and the query.
    case databaseReplaced(path: String)
    /// The schema changed under the query (a column it reads was dropped or renamed).
    case schemaChanged(message: String)
    /// The change log (``ChangeTracking``) could not be read — dropped or altered by hand: other
    /// connections' commits are refetched from now on.
    case changeLogUnavailable(String)
    /// Any other SQLite error, with the statement that failed.
    case database(sql: String?, arguments: StatementArguments?, message: String)

    public var description: String {
        switch self {
        case let .unknownTable(table): "no such table: \(table)"
        case let .unknownColumn(table, column): "no such column: \(table).\(column)"
        case let .invalidSQL(sql, arguments, message):
            "invalid SQL (\(message)): \(sql)" + (arguments.isEmpty ? "" : " with arguments \(arguments)")
        case let .invalidRequest(reason): "invalid live query: \(reason)"
        case let .invalidIdentity(value, type): "the identity \(value) of a row is not a valid \(type); the row is left out"
        case let .duplicateIdentity(value): "several rows have the identity \(value); only the first is shown"
        case let .databaseBusy(message): "database busy: \(message)"
        case let .databaseGone(reason): "database gone: \(reason)"
        case let .databaseReplaced(path): "database replaced: another file is now at \(path); reopen it"
        case let .schemaChanged(message): "schema changed under the live query: \(message)"
        case let .changeLogUnavailable(reason): "the change log cannot be read (\(reason)); other connections' commits are refetched"
        case let .database(sql, arguments, message):
            "database error (\(message))" + (sql.map { ": \($0)" } ?? "")
                + (arguments.map { $0.isEmpty ? "" : " with arguments \($0)" } ?? "")
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

    /// Classifies an error thrown by GRDB while running `sql` with `arguments`.
    static func from(_ error: any Error, sql: String?, arguments: StatementArguments? = nil) -> LiveQueryError {
        if let error = error as? LiveQueryError { return error }
        guard let error = error as? DatabaseError else {
            return .database(sql: sql, arguments: arguments, message: String(describing: error))
        }
        let message = error.message ?? "\(error)"
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .databaseBusy(message: message)
        case .SQLITE_SCHEMA: return .schemaChanged(message: message)
        case .SQLITE_MISUSE where message.contains("closed"): return .databaseGone(message)
        case .SQLITE_READONLY where error.extendedResultCode == .SQLITE_READONLY_DBMOVED: return .databaseGone(message)
        case .SQLITE_ERROR where message.hasPrefix("no such column") || message.hasPrefix("no such table"):
            return .schemaChanged(message: message)
        default: return .database(sql: error.sql ?? sql, arguments: arguments ?? error.arguments, message: message)
        }
    }
}
