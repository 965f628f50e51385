/// Why a live query could not open, or what went wrong while it followed the database, whatever
/// its engine. Surfaced as values: the last good result stays displayed. A database's own errors
/// keep the engine's error value (``DatabaseFailure/error``) with its message and statement, so
/// callers match them as users of the engine's driver do — SQLite's through LiveQuery's
/// `databaseError`:
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
    /// The database rejected the SQL (the request's, or a filter's): the failure carries the
    /// statement, its arguments and the database's message.
    case invalidSQL(DatabaseFailure)
    /// The request cannot be followed as given; the case says why and what to do.
    case invalidRequest(InvalidRequest)
    /// The database stayed busy or locked through every retry.
    case databaseBusy(DatabaseFailure)
    /// The database file was removed, or the connection was closed. The query has stopped.
    case databaseGone(String)
    /// Another file now sits at the database's path (it was deleted and created again, or
    /// replaced by a rename): the connection still reads the old one. The query has stopped;
    /// reopen the database and the query.
    case databaseReplaced(path: String)
    /// The schema changed under the query: a statement that compiled when the query opened does
    /// not compile any more (a column or table it reads was dropped or renamed).
    case schemaChanged(DatabaseFailure)
    /// The change log (SQLite's `ChangeTracking`) could not be read — dropped or altered by hand:
    /// other connections' commits are refetched from now on.
    case changeLogUnavailable(String)
    /// Any other error of the database, with the statement that failed.
    case database(DatabaseFailure)
    /// An error that did not come from the database (thrown by a request's own code, for
    /// example), or an engine's own (PostgreSQL's `PostgresLiveQueryError`).
    case underlying(any Error)

    public var description: String {
        switch self {
        case let .unknownTable(table): "no such table: \(table)"
        case let .unknownColumn(table, column): "no such column: \(table).\(column)"
        case let .invalidSQL(failure): "invalid SQL (\(failure.message))" + failure.statement
        case let .invalidRequest(reason): "invalid live query: \(reason)"
        case let .databaseBusy(failure): "database busy: \(failure.message)"
        case let .databaseGone(reason): "database gone: \(reason)"
        case let .databaseReplaced(path): "database replaced: another file is now at \(path); reopen it"
        case let .schemaChanged(failure): "schema changed under the live query: \(failure.message)" + failure.statement
        case let .changeLogUnavailable(reason): "the change log cannot be read (\(reason)); other connections' commits are refetched"
        case let .database(failure): "database error (\(failure.message))" + failure.statement
        case let .underlying(error): "\(error)"
        }
    }

    /// The database's own error behind this one, with its message and statement; `nil` when it
    /// did not come from the database.
    public var databaseFailure: DatabaseFailure? {
        switch self {
        case let .invalidSQL(failure), let .databaseBusy(failure), let .schemaChanged(failure), let .database(failure): failure
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
    package var isBusy: Bool {
        if case .databaseBusy = self { return true }
        return false
    }
}
