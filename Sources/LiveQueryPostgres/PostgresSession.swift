import Foundation
import ListDiff
import Logging
import PostgresNIO

/// The engine's connection: every statement the engine runs, with server errors as
/// ``PostgresLiveQueryError/server(_:sql:)`` naming the statement, and a time limit.
struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// How long a statement may go unanswered before its connection is closed under it.
    var timeout: Duration = .seconds(60)
    /// Ends its statements at once when the engine learns the server went away.
    var aborts: StatementAborts?
    /// The statements prepared on this connection (``submit(prepared:_:_:)``).
    let prepared: PreparedStatements

    init(connection: PostgresConnection, logger: Logger, timeout: Duration = .seconds(60), aborts: StatementAborts? = nil) {
        self.connection = connection
        self.logger = logger
        self.timeout = timeout
        self.aborts = aborts
        prepared = PreparedStatements(connection)
    }

    /// A new connection with `settings` run on it; one whose settings fail is closed (a connection
    /// must be closed before it goes), and the failure thrown.
    static func connect(_ configuration: PostgresConnection.Configuration, on eventLoop: (any EventLoop)? = nil, id: Int, logger: Logger,
                        timeout: Duration, aborts: StatementAborts? = nil, settings: [String]) async throws(PostgresLiveQueryError) -> PostgresSession {
        var session: PostgresSession
        do {
            let connection = if let eventLoop {
                try await PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
            } else {
                try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            }
            session = PostgresSession(connection: connection, logger: logger, timeout: timeout)
        } catch {
            throw failure(error, sql: "connect")
        }
        session.aborts = aborts
        do throws(PostgresLiveQueryError) {
            for setting in settings { try await session.execute(setting) }
        } catch {
            try? await session.connection.close()
            throw error
        }
        return session
    }

    /// Every row of `sql`, or ``PostgresLiveQueryError/timedOut(sql:after:)`` when no answer came
    /// within ``timeout``: the connection is then closed and the statement left to end on its
    /// own — a backend terminated mid-statement has been seen to leave postgres-nio's query
    /// waiting even after the close — so a dead server never holds the engine still.
    /// - Complexity: O(rows); the rows are held until the statement ends.
    func rows(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws(PostgresLiveQueryError) -> [PostgresRow] {
        try await decoded(sql, binds) { $0 }
    }

    /// Each row of `sql` as `decode` makes it, as the rows arrive — only what `decode` keeps is
    /// held, not the rows — within ``timeout`` as ``rows(_:_:)``.
    /// - Complexity: O(rows).
    func decoded<T: Sendable>(_ sql: String, _ binds: PostgresBindings = PostgresBindings(),
                              _ decode: @escaping @Sendable (PostgresRow) -> T) async throws(PostgresLiveQueryError) -> [T] {
        try await submit(sql, binds, decode).value()
    }

    /// Sends `sql` now and returns its rows to come, as ``decoded(_:_:_:)`` makes them. Statements
    /// sent one after another without waiting run back to back: postgres-nio starts each on the
    /// connection's event loop as the one before ends, so a round's reads cost one wait, not one
    /// each. In a transaction, a statement after one that failed fails too. Its time limit runs
    /// from now, so it covers the statements sent before it: statements sent together are
    /// answered within ``timeout`` together.
    /// - Complexity: O(rows).
    func submit<T: Sendable>(_ sql: String, _ binds: PostgresBindings = PostgresBindings(),
                             _ decode: @escaping @Sendable (PostgresRow) -> T) -> PendingRows<T> {
        let (connection, logger) = (connection, logger)
        return pending(sql) { values, settle in
            // Rows as they arrive, on the connection's event loop, without back-pressure: a backend is
            // never left blocked sending to a reader that has not asked for more (postgres-nio 1.33
            // stops the process when a connection is cut while its row stream waits for demand), and
            // only what `decode` keeps is held.
            connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) { row in values.append(decode(row)) }
                .whenComplete { settle($0.map { _ in }) }
        }
    }

    /// Sends `sql` prepared once on this connection, run with `parameters`
    /// (``StatementParameters``): PostgreSQL parses and plans it once, not on every run. Every
    /// parameter's type must be fixed by the text (`CAST($1 AS text[])`) unless its value is NULL:
    /// a prepared statement's parameters take the types PostgreSQL infers for them. Its rows'
    /// values are binary, though postgres-nio says text: read them by their bytes and type, not
    /// with `decode`.
    ///
    /// A statement prepared already runs in turn with those sent by ``submit(_:_:_:)``. One that is
    /// not is prepared first, and runs once that prepare is answered: after the statements sent
    /// meanwhile. A statement refused because its tables changed shape since it was prepared
    /// (SQLSTATE 0A000), or because the server no longer has it (26000), fails as outdated
    /// (``PostgresStatementFailure/isOutdated``, so ``PostgresLiveQueryError/isTransient``) and is
    /// prepared again next time; once only: a statement prepared for the run that fails so fails
    /// as the server said.
    ///
    /// Once the server has lost the connection's prepared statements twice (a pooler between), it
    /// is sent as text, as ``submit(_:_:_:)`` sends it.
    /// - Complexity: O(rows); the first run on a connection waits for the prepare.
    func submit<T: Sendable>(prepared sql: String, _ parameters: StatementParameters,
                             _ decode: @escaping @Sendable (PostgresRow) -> T) -> PendingRows<T> {
        let statements = prepared
        guard statements.preparing else { return submit(sql, parameters.bindings, decode) }
        return pending(sql) { values, settle in
            statements.with(sql) { result, earlier in
                switch result {
                case let .success(statement):
                    statement.execute(parameters.values) { row in values.append(decode(row)) }.whenComplete { result in
                        settle(result.mapError { Self.runFailure($0, of: sql, earlier: earlier, statements) })
                    }
                case let .failure(error):
                    settle(.failure(Self.failure(error, sql: sql, prepared: true)))
                }
            }
        }
    }

    /// A prepared statement's run that failed, as the engine's error: outdated when the statement
    /// was prepared before this run asked for it (`earlier`, its generation) and PostgreSQL says
    /// its tables' columns changed (0A000) or that it has no such statement (26000) — the statement
    /// is then let go, to be prepared anew next time.
    private static func runFailure(_ error: any Error, of sql: String, earlier: UInt64?,
                                   _ statements: PreparedStatements) -> PostgresLiveQueryError {
        let failure = failure(error, sql: sql, prepared: true)
        guard let earlier, case var .refused(refused, _) = failure, ["0A000", "26000"].contains(refused.sqlState) else { return failure }
        statements.discard(sql, generation: earlier, lost: refused.sqlState == "26000")
        refused.isOutdated = true
        return .refused(refused, sql: sql)
    }

    /// Sends `sql` with `binding`: as text, or prepared on this connection.
    func submit<T: Sendable>(_ sql: String, _ binding: StatementBinding,
                             _ decode: @escaping @Sendable (PostgresRow) -> T) -> PendingRows<T> {
        switch binding {
        case let .text(binds): submit(sql, binds, decode)
        case let .prepared(parameters): submit(prepared: sql, parameters, decode)
        }
    }

    /// A statement's rows to come: `start` sends it, with a box for its rows and the function that
    /// ends it; its time limit and an abort race the end to settle it, on the connection's event
    /// loop — no task per statement.
    private func pending<T: Sendable>(_ sql: String,
                                      _ start: (Decoded<T>, @escaping @Sendable (Result<Void, any Error>) -> Void) -> Void) -> PendingRows<T> {
        let (connection, timeout, aborts) = (connection, timeout, aborts)
        let loop = connection.eventLoop
        let promise = loop.makePromise(of: [T].self)
        let once = Once()
        let values = Decoded<T>()
        start(values) { result in
            guard once.take() else { return }
            switch result {
            case .success: promise.succeed(values.all)
            case let .failure(error): promise.fail(error)
            }
        }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let timer = loop.scheduleTask(in: .nanoseconds(nanoseconds)) {
            guard once.take() else { return }
            promise.fail(PostgresLiveQueryError.timedOut(sql: sql, after: timeout))
            // A close that fails leaves nothing more to do: the statement has failed already.
            connection.close().whenComplete { _ in }
        }
        let registration = aborts?.register { error in
            guard once.take() else { return }
            promise.fail(error)
            connection.close().whenComplete { _ in }
        }
        promise.futureResult.whenComplete { _ in
            timer.cancel()
            if let registration { aborts?.unregister(registration) }
        }
        return PendingRows(future: promise.futureResult, sql: sql)
    }

    /// Each row of `sql`, in order.
    func forEachRow(_ sql: String, _ binds: PostgresBindings,
                    _ body: (PostgresRow) throws(PostgresLiveQueryError) -> Void) async throws(PostgresLiveQueryError) {
        for row in try await rows(sql, binds) { try body(row) }
    }

    func execute(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws(PostgresLiveQueryError) {
        _ = try await rows(sql, binds)
    }

    /// The longest a statement that reads nothing (BEGIN, SAVEPOINT, COMMIT, a WAL position) may
    /// go unanswered: a server that does not answer one within it is gone — a connection cut by a
    /// server restart has been seen to leave statements waiting rather than failing.
    static let controlTimeout: Duration = .seconds(5)

    /// This session with ``controlTimeout`` as its time limit, when that is shorter.
    var control: PostgresSession {
        var session = self
        session.timeout = min(timeout, Self.controlTimeout)
        return session
    }

    /// The first column of the first row, as text (`nil` for NULL or no row).
    func text(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws(PostgresLiveQueryError) -> String? {
        guard let cell = try await rows(sql, binds).first?.first(where: { _ in true }), let bytes = cell.bytes else { return nil }
        return String(buffer: bytes)
    }

    /// `error` as the engine's: a server's refusal with its SQLSTATE, a connection gone as such.
    /// A prepared statement's failures come in postgres-nio's older terms (`prepared`): one without
    /// a SQLSTATE — the connection closed or reset under it, a message that could not be read — is
    /// a lost connection there, as the same failure of a statement sent as text is.
    static func failure(_ error: any Error, sql: String, prepared: Bool = false) -> PostgresLiveQueryError {
        if let error = error as? PostgresLiveQueryError { return error }
        if let error = error as? PSQLError {
            if error.serverInfo == nil, error.code == .serverClosedConnection || error.code == .clientClosedConnection {
                return .connectionClosed
            }
            return .server(error, sql: sql)
        }
        switch error as? PostgresError {
        case .connectionClosed?: return .connectionClosed
        case let .server(message)?:
            return .refused(PostgresStatementFailure(message: message.fields[.message] ?? "\(message)", detail: message.fields[.detail],
                                                     sqlState: message.fields[.sqlState]), sql: sql)
        case let .protocol(message)?: return .refused(PostgresStatementFailure(message: message), sql: sql)
        case nil: return prepared ? .refused(PostgresStatementFailure(message: "\(error)"), sql: sql) : .underlying(error)
        }
    }
}

/// The rows of a statement sent (``PostgresSession/submit(_:_:_:)``), to be awaited: a statement
/// never awaited still ends, and its time limit and abort are let go as it does.
struct PendingRows<T: Sendable>: Sendable {
    let future: EventLoopFuture<[T]>
    let sql: String

    func value() async throws(PostgresLiveQueryError) -> [T] {
        do {
            return try await future.get()
        } catch let error as PostgresLiveQueryError {
            throw error
        } catch {
            throw PostgresSession.failure(error, sql: sql)
        }
    }
}

/// The decoded rows of one statement, appended on its connection's event loop and read once it
/// has ended.
final class Decoded<T: Sendable>: Sendable {
    private let values = Locked<[T]>([])

    func append(_ value: T) { values.withLock { $0.append(value) } }

    var all: [T] { values.withLock { $0 } }
}

/// Settles once: the first of a statement's end, its time limit and an abort takes it.
final class Once: Sendable {
    private let taken = Locked(false)

    /// Whether this call is the first.
    func take() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}

/// The statements under way on an engine's connections, ended at once — with their connections
/// closed — when the replication stream finds the server gone: a statement cut by a server restart
/// has been seen to wait for its whole time limit, holding every query behind it.
final class StatementAborts: Sendable {
    private struct State {
        var aborts: [Int: @Sendable (PostgresLiveQueryError) -> Void] = [:]
        var next = 0
    }

    private let state = Locked(State())

    func register(_ abort: @escaping @Sendable (PostgresLiveQueryError) -> Void) -> Int {
        state.withLock { state in
            state.next += 1
            state.aborts[state.next] = abort
            return state.next
        }
    }

    func unregister(_ id: Int) { _ = state.withLock { $0.aborts.removeValue(forKey: id) } }

    /// Ends every statement under way with `error`.
    func fire(_ error: PostgresLiveQueryError) {
        let ending = state.withLock { state in
            defer { state.aborts = [:] }
            return Array(state.aborts.values)
        }
        for abort in ending { abort(error) }
    }
}
