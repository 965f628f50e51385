/// What PostgreSQL said when it refused a statement the engine had prepared on its connection
/// (``PostgresLiveQueryError/refused(_:sql:)``).
public struct PostgresStatementFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server's message.
    public var message: String
    /// The server's detail, when it sent one.
    public var detail: String?
    /// The SQLSTATE (`22012`: division by zero…).
    public var sqlState: String?
    /// Whether the statement was prepared before its tables' columns changed, or the server no
    /// longer has it: it is prepared again and its work retried, never a query's failure.
    var isOutdated = false

    /// A failure with `message`.
    public init(message: String, detail: String? = nil, sqlState: String? = nil) {
        self.message = message
        self.detail = detail
        self.sqlState = sqlState
    }

    /// The message, and the SQLSTATE when there is one.
    public var description: String { message + (sqlState.map { " (SQLSTATE \($0))" } ?? "") }
}
