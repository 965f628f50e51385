import Logging
import PostgresNIO

/// The connection that reads rows' contents for the queries' consumers (a server's windows),
/// beside the rounds: opened on first use and again after it fails. Its reads need no snapshot of
/// their own: each row is kept only where it still has the content token of the result it is read
/// for (`PostgresQueryRunner.payloads(of:_:)`).
actor ContentsConnection {
    let configuration: PostgresConnection.Configuration
    let timeout: Duration
    let logger: Logger
    /// Ends its statements when the replication stream finds the server gone.
    let aborts: StatementAborts
    private var session: PostgresSession?
    private var closed = false

    init(configuration: PostgresConnection.Configuration, timeout: Duration, logger: Logger, aborts: StatementAborts) {
        self.configuration = configuration
        self.aborts = aborts
        self.timeout = timeout
        self.logger = logger
    }

    /// The open connection, opened (in the rounds' settings) when there is none.
    func open() async throws(PostgresLiveQueryError) -> PostgresSession {
        guard !closed else { throw .connectionClosed }
        if let session, !session.connection.isClosed { return session }
        let opened = try await PostgresSession.connect(configuration, id: 3, logger: logger, timeout: timeout, aborts: aborts, settings: Self.settings)
        // The actor takes other calls while it connects: another may have opened one meanwhile, or
        // closed it for good. A connection is closed before it goes.
        if closed {
            try? await opened.connection.close()
            throw .connectionClosed
        }
        if let session, !session.connection.isClosed {
            try? await opened.connection.close()
            return session
        }
        // Replaced before anything else is awaited, so no other call replaces it in between.
        let stale = session
        session = opened
        if let stale { try? await stale.connection.close() }
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
