import Logging
import PostgresNIO

/// The connection that reads rows' contents for the queries' consumers (a server's windows),
/// beside the rounds: opened on first use and again after it fails. Its reads need no snapshot of
/// their own: each row is kept only where it still has the content token of the result it is read
/// for (`_PostgresQueryRunner.payloads(of:_:)`).
actor _ContentsConnection {
    let configuration: PostgresConnection.Configuration
    let timeout: Duration
    let logger: Logger
    private var session: _PgSession?
    private var closed = false

    init(configuration: PostgresConnection.Configuration, timeout: Duration, logger: Logger) {
        self.configuration = configuration
        self.timeout = timeout
        self.logger = logger
    }

    /// The open connection, opened (in the rounds' settings) when there is none.
    func open() async throws(PostgresLiveQueryError) -> _PgSession {
        guard !closed else { throw .connectionClosed }
        if let session, !session.connection.isClosed { return session }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, id: 3, logger: logger)
        } catch {
            throw _PgSession.failure(error, sql: "connect")
        }
        let opened = _PgSession(connection: connection, logger: logger, timeout: timeout)
        for setting in _ContentsConnection.settings { try await opened.execute(setting) }
        session = opened
        return opened
    }

    /// What every connection reading rows sets: the text of dates and times in UTC and ISO form,
    /// floats exact.
    static let settings = ["SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, YMD'", "SET IntervalStyle = 'iso_8601'", "SET extra_float_digits = 3"]

    func close() async {
        closed = true
        if let session { try? await session.connection.close() }
        session = nil
    }
}
