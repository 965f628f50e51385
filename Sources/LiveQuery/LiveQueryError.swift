import GRDB

/// Why a live query could not open, or stopped following the database. Surfaced as values: the
/// last good result stays displayed.
public enum LiveQueryError: Error, Sendable, CustomStringConvertible {
    /// The table does not exist.
    case unknownTable(String)
    /// A sort, section or version column does not exist in the table.
    case unknownColumn(table: String, column: String)
    /// The filter (or another part of the generated SQL) is not valid SQL.
    case invalidSQL(sql: String, message: String)
    /// The request is inconsistent (for example, sections that are not the first sort term).
    case invalidRequest(String)
    /// The database stayed busy or locked through every retry.
    case databaseBusy(message: String)
    /// The database file was removed, or the connection was closed.
    case databaseGone(String)
    /// The schema changed under the query (a column it reads was dropped or renamed).
    case schemaChanged(message: String)
    /// Any other SQLite error, with the SQL that failed.
    case database(sql: String?, message: String)

    public var description: String {
        switch self {
        case let .unknownTable(table): "no such table: \(table)"
        case let .unknownColumn(table, column): "no such column: \(table).\(column)"
        case let .invalidSQL(sql, message): "invalid SQL (\(message)): \(sql)"
        case let .invalidRequest(reason): "invalid live query: \(reason)"
        case let .databaseBusy(message): "database busy: \(message)"
        case let .databaseGone(reason): "database gone: \(reason)"
        case let .schemaChanged(message): "schema changed under the live query: \(message)"
        case let .database(sql, message): "database error (\(message))" + (sql.map { ": \($0)" } ?? "")
        }
    }

    /// Classifies an error thrown by GRDB while running `sql`.
    static func from(_ error: any Error, sql: String?) -> LiveQueryError {
        if let error = error as? LiveQueryError { return error }
        guard let error = error as? DatabaseError else { return .database(sql: sql, message: String(describing: error)) }
        let message = error.message ?? "\(error)"
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .databaseBusy(message: message)
        case .SQLITE_SCHEMA: return .schemaChanged(message: message)
        case .SQLITE_MISUSE where message.contains("closed"): return .databaseGone(message)
        case .SQLITE_READONLY where error.extendedResultCode == .SQLITE_READONLY_DBMOVED: return .databaseGone(message)
        case .SQLITE_ERROR where message.hasPrefix("no such column") || message.hasPrefix("no such table"):
            return .schemaChanged(message: message)
        default: return .database(sql: error.sql ?? sql, message: message)
        }
    }
}
