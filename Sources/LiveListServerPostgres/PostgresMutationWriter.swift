import LiveListServer
import LiveListWire
import LiveQueryCore
import LiveQueryPostgres
import Logging
import PostgresNIO

/// Runs a server's mutations over PostgreSQL, one at a time on a connection of its own (opened
/// when the first comes, opened again after it is lost), each in one transaction with the
/// client's ledger (``MutationLedger``'s tables, created once). The ledger's row for the client
/// is locked (`FOR UPDATE`), so two instances given the same mutation apply it once.
///
/// One at a time in the order they come, each ending before the next begins: an actor alone
/// would let a second mutation start while the first waits for PostgreSQL, and both would share
/// the connection's one transaction.
actor PostgresMutationWriter {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private var connection: PostgresConnection?
    private var ledgerReady = false
    /// The last mutation given: the next one waits for it to end.
    private var tail: Task<Void, Never>?

    init(configuration: PostgresConnection.Configuration, logger: Logger = Logger(label: "livelist.postgres.mutations")) {
        self.configuration = configuration
        self.logger = logger
    }

    func perform(_ request: MutationRequest) async throws -> MutationOutcome {
        let previous = tail
        let job = Task { () async throws -> MutationOutcome in
            await previous?.value
            return try await self.performNext(request)
        }
        tail = Task { _ = await job.result }
        return try await job.value
    }

    /// Closes the connection once the mutations given so far have ended.
    func close() async {
        await tail?.value
        guard let connection else { return }
        self.connection = nil
        do {
            try await connection.close()
        } catch {
            logger.debug("closing the mutations' connection: \(error)")
        }
    }

    private func performNext(_ request: MutationRequest) async throws -> MutationOutcome {
        let connection: PostgresConnection
        do {
            connection = try await connected()
        } catch {
            throw WireError(sub: nil, code: .mutationUnavailable, message: "PostgreSQL is unreachable: \(Self.message(error))")
        }
        do {
            try await run("BEGIN", on: connection)
            let outcome = try await perform(request, on: connection)
            try await run("COMMIT", on: connection)
            return outcome
        } catch {
            await abandon(connection)
            if let error = error as? WireError { throw error }
            // A COMMIT whose answer was lost may have applied it: the resend is answered from the ledger.
            throw WireError(sub: nil, code: .mutationUnavailable, message: "the mutation could not run: \(Self.message(error))")
        }
    }

    /// Rolls the transaction back; a connection that cannot is closed and opened again next time.
    private func abandon(_ connection: PostgresConnection) async {
        guard !connection.isClosed else {
            self.connection = nil
            return
        }
        do {
            try await run("ROLLBACK", on: connection)
        } catch {
            self.connection = nil
            do { try await connection.close() } catch { logger.debug("closing the mutations' connection: \(error)") }
        }
    }

    private func connected() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        let made = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        do {
            // One mutation at a time: a row lock held elsewhere, or a runaway statement, must not
            // hold the ones behind it for long. Either ends the mutation with `mutationUnavailable`.
            try await run("SET lock_timeout = '5s'", on: made)
            try await run("SET statement_timeout = '30s'", on: made)
            if !ledgerReady {
                for statement in MutationLedger.createStatements { try await run(statement, on: made) }
                ledgerReady = true
            }
        } catch {
            // Set up again, on a new connection, next time.
            do { try await made.close() } catch { logger.debug("closing the mutations' connection: \(error)") }
            throw error
        }
        connection = made
        return made
    }

    private func perform(_ request: MutationRequest, on connection: PostgresConnection) async throws -> MutationOutcome {
        var owner = PostgresBindings()
        owner.append(request.principal)
        owner.append(request.client)
        // A row for the client first (a new client's too), so that the lock below always has a row
        // to take: two instances given a new client's first mutation at once apply it once.
        try await run(MutationLedger.ensureClientSQL, binds: owner, on: connection)
        let lastRows = try await run(MutationLedger.lastIDSQL + " FOR UPDATE", binds: owner, on: connection).rows
        let last = try lastRows.first?.decode(Int64.self) ?? 0
        var recorded: MutationRefusal?
        if request.id <= last {
            var binds = owner
            binds.append(request.id)
            let rows = try await run(MutationLedger.refusalSQL, binds: binds, on: connection).rows
            if let row = rows.first {
                let (code, message) = try row.decode((String, String).self)
                recorded = MutationRefusal(storedCode: code, message: message)
            }
        }
        switch MutationStep(id: request.id, last: last, refusal: recorded) {
        case let .outOfOrder(expected):
            throw request.outOfOrder(expected: expected)
        case let .answer(outcome):
            return outcome
        case .apply:
            let refusal: MutationRefusal? = switch request.action {
            case let .refuse(refused): refused
            case let .run(mutation, arguments): try await runGuarded(mutation, arguments, on: connection)
            }
            var binds = owner
            binds.append(request.id)
            try await run(MutationLedger.recordIDSQL, binds: binds, on: connection)
            guard let refusal else { return .applied }
            var refusalBinds = binds
            refusalBinds.append(refusal.code.rawValue)
            refusalBinds.append(refusal.message)
            try await run(MutationLedger.recordRefusalSQL, binds: refusalBinds, on: connection)
            var pruneBinds = owner
            pruneBinds.append(request.id - MutationStep.outcomesKept)
            try await run(MutationLedger.pruneRefusalsSQL, binds: pruneBinds, on: connection)
            return .refused(refusal)
        }
    }

    /// Runs the mutation in a savepoint: its refusal (rolled back to the savepoint), or `nil` when
    /// it applied. A lost connection, or a failure PostgreSQL says may pass (a serialization
    /// failure, a deadlock, a shutdown), throws: nothing is recorded and the client sends it again.
    private func runGuarded(_ mutation: PublishedMutation, _ arguments: [String: WireValue],
                            on connection: PostgresConnection) async throws -> MutationRefusal? {
        try await run("SAVEPOINT livelist_mutation", on: connection)
        do {
            try await runStatements(of: mutation, arguments, on: connection)
            try await run("RELEASE SAVEPOINT livelist_mutation", on: connection)
            return nil
        } catch let refusal as MutationRefusal {
            try await run("ROLLBACK TO SAVEPOINT livelist_mutation", on: connection)
            return refusal
        } catch let error as PSQLError where error.serverInfo != nil && !Self.isTransient(error) {
            try await run("ROLLBACK TO SAVEPOINT livelist_mutation", on: connection)
            return .failed(Self.message(error))
        }
    }

    private func runStatements(of mutation: PublishedMutation, _ arguments: [String: WireValue], on connection: PostgresConnection) async throws {
        guard case let .statements(statements) = mutation.definition else {
            throw MutationRefusal.failed("mutation \"\(mutation.name)\" is another engine's code: publish it as statements to run it on PostgreSQL")
        }
        for (index, statement) in statements.enumerated() {
            let numbered: String, values: [SQLValue]
            do {
                (numbered, values) = try PostgresEngine.numbered(statement.sql, arguments)
            } catch {
                throw MutationRefusal.failed("mutation \"\(mutation.name)\" uses :\(error.name), which no parameter declares")
            }
            var binds = PostgresBindings()
            for value in values { PostgresLiveQueryRequest<SQLValue>.bind(value, into: &binds) }
            let changed = try await run(numbered, binds: binds, on: connection).metadata.rows ?? 0
            if statement.mustChangeRows, changed == 0 {
                throw MutationRefusal.conflict("statement \(index + 1) of mutation \"\(mutation.name)\" changed no row")
            }
        }
    }

    @discardableResult
    private func run(_ sql: String, binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection) async throws -> PostgresQueryResult {
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).get()
    }

    /// Class 08 (connection), 40 (serialization failure, deadlock), 53 (resources), 57 (shutdown,
    /// a statement cancelled by its time limit), and 55P03 (a lock not granted within its time).
    private static func isTransient(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return true }
        return state == "55P03" || ["08", "40", "53", "57"].contains(String(state.prefix(2)))
    }

    private static func message(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(reflecting: error) }
        return PostgresLiveQueryError.message(error, withDetail: true)
    }
}
