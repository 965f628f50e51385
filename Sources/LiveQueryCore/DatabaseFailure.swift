/// An error the database itself reported, as an engine hands it to a live query: what people
/// read (the message, the statement and its arguments) beside the engine's own error value, for
/// code that matches it — GRDB's `DatabaseError` for SQLite (``LiveQueryError/databaseError``
/// in LiveQuery), postgres-nio's `PSQLError` inside a `PostgresLiveQueryError` for PostgreSQL.
public struct DatabaseFailure: Error, Sendable, CustomStringConvertible {
    /// The engine's error, as its driver threw it.
    public let error: any Error & Sendable
    /// The database's message (or, without one, its result code).
    public let message: String
    /// The statement that failed, when known.
    public let sql: String?
    /// The statement's arguments as the driver prints them, when there were any.
    public let arguments: String?

    /// A failure reported by an engine.
    public init(_ error: any Error & Sendable, message: String, sql: String? = nil, arguments: String? = nil) {
        self.error = error
        self.message = message
        self.sql = sql
        self.arguments = arguments
    }

    /// The statement and its arguments, as `": SQL with arguments …"`, or nothing.
    var statement: String {
        guard let sql else { return "" }
        return ": \(sql)" + (arguments.map { " with arguments \($0)" } ?? "")
    }

    public var description: String { message + statement }
}
