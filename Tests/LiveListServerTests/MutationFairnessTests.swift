import Foundation
import ListTesting
import LiveListServer
import LiveListWire
import Logging
import LiveListServerSQLite
import LiveQueryCore
import ListDiff
import Testing

/// Mutation lanes are fair, end to end, counted rather than timed: while one connection has 100
/// mutations queued, another's one mutation reaches the engine after at most one of them.
@Suite("Fair mutation lanes", .serialized, .timeLimit(.minutes(3)))
struct MutationFairnessTests {
    /// An engine that runs mutations one at a time in the order given — as SQLite's writer and
    /// PostgreSQL's mutation connection do — and holds each until the test opens its gate.
    final class GatedEngine: LiveQueryEngine, @unchecked Sendable {
        // `@unchecked Sendable`: `ran`, `isOpen`, `held` and `tail` are read and written under
        // `lock` only.
        private let lock = NSLock()
        private var ran: [String] = []
        private var isOpen = false
        private var held: [CheckedContinuation<Void, Never>] = []
        private var tail: Task<Void, Never>?

        func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
            throw WireError(sub: nil, code: .queryFailed, message: "this engine serves no queries")
        }

        func perform(_ request: MutationRequest) async throws -> MutationOutcome {
            let job = lock.withLock { () -> Task<Void, Never> in
                let previous = tail
                let job = Task { [self] in
                    await previous?.value
                    await run("\(request.client):\(request.id)")
                }
                tail = job
                return job
            }
            await job.value
            return .applied
        }

        private func run(_ name: String) async {
            await withCheckedContinuation { continuation in
                let go = lock.withLock { () -> Bool in
                    ran.append(name)
                    if !isOpen { held.append(continuation) }
                    return isOpen
                }
                if go { continuation.resume() }
            }
        }

        /// Notes `name` in the engine's order (the test's looks).
        func note(_ name: String) { lock.withLock { ran.append(name) } }

        /// The mutations that reached the engine, in order.
        var order: [String] { lock.withLock { ran } }

        /// Lets every mutation through, from now on.
        func openGate() {
            let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                isOpen = true
                defer { held = [] }
                return held
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    @MainActor
    final class Answers {
        var a: [ServerMessage] = []
        var b: [ServerMessage] = []
    }

    static let mutation = PublishedMutation(name: "m", statements: [.init("UPDATE t SET n = n + 1")])

    @Test("while A has 100 mutations queued, B's one runs after at most one of A's")
    @MainActor
    func bystanderWaitsForOneMutation() async throws {
        let engine = GatedEngine()
        var logger = Logger(label: "test.server")
        logger.logLevel = .warning
        let server = LiveListServer(engine: engine, queries: [], mutations: [Self.mutation], logger: logger)
        let (port, group, running) = try await WireFixture.serve(server)
        let url = "ws://127.0.0.1:\(port)/live"
        let a = try await MutationTests.Wire(url)
        let b = try await MutationTests.Wire(url)
        for id in 1...100 { a.send(.mutate(WireMutation(client: "a", id: Int64(id), name: "m"))) }
        try await eventually("A's first mutation with the engine", seconds: 10) { engine.order == ["a:1"] }
        b.send(.mutate(WireMutation(client: "b", id: 1, name: "m")))
        // Requests are handled in order: once this is answered, B's mutation is queued.
        b.send(.sync(sub: 99, id: 1))
        try await within("B's requests handled", seconds: 10) {
            while true {
                if case let .error(error) = try await b.next(), error.sub == 99 { return }
            }
        }
        engine.openGate()
        let answers = Answers()
        try await within("every mutation answered", seconds: 30) {
            answers.a = try await a.untilAnswer(to: 100)
            answers.b = try await b.untilAnswer(to: 1)
        }
        let mutated = (answers.a + answers.b).filter { if case .mutated = $0 { true } else { false } }.count
        #expect(mutated == 101, "every mutation applied: \(answers.a.suffix(3)) \(answers.b)")
        let order = engine.order
        #expect(order.count == 101)
        let aheadOfB = order.prefix { $0 != "b:1" }.count
        #expect(aheadOfB <= 1, "A's mutations that ran before B's: \(aheadOfB) (\(order.prefix(5)))")
        a.connection.close()
        b.connection.close()
        await group.triggerGracefulShutdown()
        _ = await running.result
    }

    /// SQLite's engine for queries, whose looks (`upToDate`) take 50 ms and are noted in the
    /// gated engine's order; mutations go to the gated engine.
    struct LookingEngine: LiveQueryEngine {
        let queries: SQLiteEngine
        let mutations: GatedEngine

        struct NotedQuery: ServedLiveQuery {
            let inner: any ServedLiveQuery
            let engine: GatedEngine
            var events: AsyncStream<LiveQueryEvent<SQLValue>> { inner.events }
            var columnNames: [String] { inner.columnNames }
            func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] { try await inner.values(of: rows) }
            func cancel() { inner.cancel() }
            func upToDate() async throws -> ListStateID? {
                engine.note("look")
                try await Task.sleep(for: .milliseconds(50))
                defer { engine.note("looked") }
                return try await inner.upToDate()
            }
        }

        func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
            NotedQuery(inner: try await queries.open(query, arguments: arguments), engine: mutations)
        }

        func perform(_ request: MutationRequest) async throws -> MutationOutcome { try await mutations.perform(request) }
    }

    @Test("a mutation's look for its commit is part of its turn: no other connection's mutation reaches the engine before it ends")
    @MainActor
    func lookWithinTurn() async throws {
        let fixture = try await WireFixture.start(rows: 30, seed: 17)
        let gated = GatedEngine()
        var logger = Logger(label: "test.server")
        logger.logLevel = .warning
        let server = LiveListServer(engine: LookingEngine(queries: SQLiteEngine(database: fixture.pool), mutations: gated),
                                    queries: [HealthTests.scored], mutations: [Self.mutation], logger: logger)
        let (port, group, running) = try await WireFixture.serve(server)
        let url = "ws://127.0.0.1:\(port)/live"
        let a = try await MutationTests.Wire(url)
        let b = try await MutationTests.Wire(url)
        // B shows a list: its `mutated` waits for a look at the list's commits.
        b.send(.subscribe(WireSubscription(sub: 1, query: HealthTests.scored.name, window: WireWindow(start: 0, count: 10))))
        try await within("B's first state", seconds: 10) {
            while true {
                if case .reset = try await b.next() { return }
            }
        }
        for id in 1...20 { a.send(.mutate(WireMutation(client: "a", id: Int64(id), name: "m"))) }
        try await eventually("A's first mutation with the engine", seconds: 10) { gated.order == ["a:1"] }
        b.send(.mutate(WireMutation(client: "b", id: 1, name: "m")))
        b.send(.sync(sub: 99, id: 1))
        try await within("B's requests handled", seconds: 10) {
            while true {
                if case let .error(error) = try await b.next(), error.sub == 99 { return }
            }
        }
        gated.openGate()
        try await within("every mutation answered", seconds: 30) {
            _ = try await a.untilAnswer(to: 20)
            _ = try await b.untilAnswer(to: 1)
        }
        let order = gated.order
        guard let mine = order.firstIndex(of: "b:1"), let looked = order[mine...].firstIndex(of: "looked") else {
            Issue.record("B's mutation and its look: \(order)")
            return
        }
        #expect(order[mine...].prefix(through: looked).filter { $0.hasPrefix("a:") }.isEmpty,
                "A's mutations that reached the engine while B's look ran: \(order[mine...].prefix(through: looked))")
        #expect(order.prefix(upTo: mine).filter { $0.hasPrefix("a:") }.count <= 1, "\(order.prefix(upTo: mine))")
        a.connection.close()
        b.connection.close()
        await group.triggerGracefulShutdown()
        _ = await running.result
        await fixture.stop()
    }
}
