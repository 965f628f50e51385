import Foundation
import GRDB
import LiveListClient
import ListDiff
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQueryCore
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Readiness as load balancers read it: the decision as a value, and the endpoints of a real server
/// whose live query fails and recovers; the metrics it serves in Prometheus' text format.
@Suite("Health and metrics", .serialized)
struct HealthTests {
    let now = ContinuousClock.now
    let limits = LiveListHealth.Limits(lag: .seconds(3), lagBytes: 1_000)

    @Test("following with no lag is ready; each reason to be unavailable is named, failing queries by name")
    func assess() {
        #expect(LiveListHealth.assess(capture: .following, failingQueries: [:], shuttingDown: false, limits: limits, at: now).isEmpty)
        let behind = ChangeCaptureStatus(state: .following, lagBytes: 2_000, lag: .seconds(4))
        #expect(LiveListHealth.assess(capture: behind, failingQueries: ["b": 1, "a": 2], shuttingDown: true, limits: limits, at: now) == [
            .shuttingDown, .behind(lag: .seconds(4), limit: .seconds(3)), .behindBytes(bytes: 2_000, limit: 1_000),
            .queryFailing(query: "a", count: 2), .queryFailing(query: "b", count: 1),
        ])
        let atLimit = ChangeCaptureStatus(state: .following, lagBytes: 1_000, lag: .seconds(3))
        #expect(LiveListHealth.assess(capture: atLimit, failingQueries: [:], shuttingDown: false, limits: limits, at: now).isEmpty, "at the limit is within it")
        #expect(LiveListHealth.assess(capture: ChangeCaptureStatus(state: .starting), failingQueries: [:], shuttingDown: false, limits: limits, at: now)
            == [.captureStarting])
    }

    @Test("a capture lost briefly (a database restart) stays ready; lost past the lag limit it is not, once, not also as behind")
    func lostCapture() {
        let brief = ChangeCaptureStatus(state: .lost(since: now - .seconds(1), reason: "restart"), lag: .seconds(1))
        #expect(LiveListHealth.assess(capture: brief, failingQueries: [:], shuttingDown: false, limits: limits, at: now).isEmpty)
        let long = ChangeCaptureStatus(state: .lost(since: now - .seconds(5), reason: "gone"), lag: .seconds(5))
        #expect(LiveListHealth.assess(capture: long, failingQueries: [:], shuttingDown: false, limits: limits, at: now)
            == [.captureLost(for: .seconds(5), reason: "gone")])
    }

    @Test("the body keeps the health fields, says ready and why not, and escapes what it quotes")
    func body() throws {
        let health = LiveListHealth(notReady: [.queryFailing(query: "in\"box", count: 1)],
                                    capture: ChangeCaptureStatus(state: .following, lagBytes: 12, lag: .milliseconds(1_500)),
                                    queries: 2, subscriptions: 3, connections: 4, keptChangesets: 5, keptBytes: 6)
        let parsed = try JSONSerialization.jsonObject(with: Data(health.json.utf8))
        let object = try #require(parsed as? [String: Any])
        #expect(object["status"] as? String == "unavailable" && object["ready"] as? Bool == false)
        #expect(object["reasons"] as? [String] == ["query in\"box failing (1 live query)"])
        #expect(object["queries"] as? Int == 2 && object["subscriptions"] as? Int == 3 && object["connections"] as? Int == 4)
        #expect(object["keptChangesets"] as? Int == 5 && object["keptBytes"] as? Int == 6)
        #expect(object["capture"] as? String == "following" && object["lagBytes"] as? Int == 12 && object["lagSeconds"] as? Double == 1.5)
    }

    static let scored = PublishedQuery(name: "scored", sql: "SELECT id, day, sender FROM message WHERE abs(day) >= 0 ORDER BY day, id")

    struct Answer: Sendable {
        var status: Int
        var body: String
    }

    static func get(_ fixture: WireFixture, _ path: String) async throws -> Answer {
        let url = try #require(URL(string: "http://127.0.0.1:\(fixture.port)\(path)"))
        var request = URLRequest(url: url)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
    }

    /// Polls `path` until `condition` holds, for at most 20 s.
    static func poll(_ fixture: WireFixture, _ path: String, _ what: String,
                           _ condition: @Sendable (Answer) -> Bool) async throws -> Answer {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let answer = try await get(fixture, path)
            if condition(answer) { return answer }
            guard ContinuousClock.now < deadline else { throw TimeLimitExceeded(what: "\(what); last answer \(answer.status) \(answer.body)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("a live query that fails turns readiness 503 naming its query, liveness stays 200, and recovery turns it back; the metrics follow")
    @MainActor
    func failingQuery() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 5, queries: [WireFixture.inbox, Self.scored])
        let remote = RemoteLiveQuery(url: fixture.url, query: "scored", window: 0..<50, prefetch: 0)
        remote.start()
        try await eventually("the first state") { remote.model.state.count == 20 }
        var ready = try await Self.get(fixture, "/live/health/ready")
        #expect(ready.status == 200 && ready.body.contains("\"ready\":true") && ready.body.contains("\"capture\":\"following\""), "\(ready.body)")
        let metrics = try await Self.get(fixture, "/metrics")
        #expect(metrics.status == 200)
        for line in ["livelist_ready 1.0", "livelist_subscriptions 1.0", "livelist_connections 1.0", "livelist_live_queries 1.0"] {
            #expect(metrics.body.split(separator: "\n").contains(Substring(line)), "\(line) in \(metrics.body)")
        }
        #expect(metrics.body.contains("livelist_frames_sent_total") && metrics.body.contains("livelist_bytes_sent_total"))

        // abs() of the smallest integer overflows: the row's re-read fails, and so does the query.
        try await fixture.pool.write { db in try db.execute(sql: "INSERT INTO message(id, day, sender) VALUES (1000, -9223372036854775808, 'x')") }
        ready = try await Self.poll(fixture, "/live/health/ready", "readiness 503") { $0.status == 503 }
        #expect(ready.body.contains("query scored failing (1 live query)"), "\(ready.body)")
        #expect(try await Self.get(fixture, "/live/health/live").status == 200, "alive all the same")
        let health = try await Self.get(fixture, "/live/health")
        #expect(health.status == 200 && health.body.contains("\"status\":\"unavailable\""), "the summary is always 200: \(health.body)")
        let failing = try await Self.get(fixture, "/metrics")
        #expect(failing.body.contains("livelist_ready 0.0") && failing.body.contains("livelist_query_failures_total{query=\"scored\"} "),
                "\(failing.body)")

        try await fixture.pool.write { db in try db.execute(sql: "DELETE FROM message WHERE id = 1000") }
        ready = try await Self.poll(fixture, "/live/health/ready", "readiness 200 again") { $0.status == 200 }
        #expect(ready.body.contains("\"reasons\":[]"))
        let recovered = try await Self.get(fixture, "/metrics")
        #expect(recovered.body.contains("livelist_ready 1.0") && recovered.body.contains("livelist_refetches_total{reason=\"recovering\"}"),
                "\(recovered.body)")
        remote.stop()
        await fixture.stop()
    }

    @Test("a live query whose changes wait to be sent longer than the lag limit is named, once, with the longest wait")
    func stuck() {
        let waiting = [(query: "inbox", since: now - .seconds(5)), (query: "inbox", since: now - .seconds(9)), (query: "other", since: now - .seconds(1))]
        #expect(LiveListHealth.assess(capture: .following, failingQueries: [:], waiting: waiting, shuttingDown: false, limits: limits, at: now)
            == [.queryStuck(query: "inbox", for: .seconds(9))])
    }

    /// Holds every read of rows' values while closed.
    actor Gate {
        private var isOpen = true
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func close() { isOpen = false }

        func open() {
            isOpen = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }

        func pass() async {
            guard !isOpen else { return }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    /// SQLite's served query, its reads of rows' values held by a gate.
    struct GatedQuery: ServedLiveQuery {
        let inner: any ServedLiveQuery
        let gate: Gate
        var events: AsyncStream<LiveQueryEvent<SQLValue>> { inner.events }
        var columnNames: [String] { inner.columnNames }
        func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] {
            await gate.pass()
            return try await inner.values(of: rows)
        }
        func cancel() { inner.cancel() }
    }

    struct GatedEngine: LiveQueryEngine {
        let inner: SQLiteEngine
        let gate: Gate
        func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
            GatedQuery(inner: try await inner.open(query, arguments: arguments), gate: gate)
        }
    }

    @Test("a hub stuck on a read that does not end turns readiness 503, naming its query; once the read ends it is ready again")
    @MainActor
    func stuckHub() async throws {
        let fixture = try await WireFixture.start(rows: 30, seed: 9)
        let gate = Gate()
        var configuration = LiveListServer.Configuration()
        configuration.maximumLag = .milliseconds(300)
        let server = LiveListServer(engine: GatedEngine(inner: SQLiteEngine(database: fixture.pool), gate: gate), queries: [Self.scored],
                                    configuration: configuration)
        let (port, group, running) = try await WireFixture.serve(server)
        let remote = RemoteLiveQuery(url: "ws://127.0.0.1:\(port)/live", query: "scored", window: 0..<50, prefetch: 0)
        remote.start()
        try await eventually("the first state") { remote.model.state.count == 30 }
        #expect(await server.health().isReady)
        await gate.close()
        try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET sender = 'changed' WHERE id = (SELECT min(id) FROM message)") }
        let deadline = ContinuousClock.now + .seconds(20)
        var health = await server.health()
        while health.isReady, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            health = await server.health()
        }
        #expect(health.notReady.count == 1 && "\(health.notReady)".contains("scored"), "\(health.notReady)")
        if case .queryStuck? = health.notReady.first {} else { Issue.record("expected queryStuck, got \(health.notReady)") }
        await gate.open()
        let again = ContinuousClock.now + .seconds(20)
        while !(await server.health().isReady), ContinuousClock.now < again { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await server.health().isReady)
        remote.stop()
        await group.triggerGracefulShutdown()
        _ = await running.result
        await fixture.stop()
    }

    @Test("mutations are counted by outcome and timed; what waits is a gauge")
    func mutationMetrics() async throws {
        let fixture = try await MutationTests.start()
        let wire = try await MutationTests.Wire(fixture.url)
        wire.send(.mutate(WireMutation(client: "metrics", id: 1, name: "archive", arguments: ["id": .integer(1)])))
        _ = try await wire.untilAnswer(to: 1)
        wire.send(.mutate(WireMutation(client: "metrics", id: 1, name: "archive", arguments: ["id": .integer(1)])))
        _ = try await wire.untilAnswer(to: 1)
        wire.send(.mutate(WireMutation(client: "metrics", id: 2, name: "nothing")))
        _ = try await wire.untilAnswer(to: 2)
        let metrics = try await Self.get(fixture, "/metrics")
        for line in ["livelist_mutations_total{outcome=\"applied\"} 1", "livelist_mutations_total{outcome=\"duplicate\"} 1",
                     "livelist_mutations_total{outcome=\"refused\"} 1", "livelist_mutation_seconds_count 3", "livelist_mutations_waiting 0.0"] {
            #expect(metrics.body.split(separator: "\n").contains(Substring(line)), "\(line) in \(metrics.body)")
        }
        wire.connection.close()
        await fixture.stop()
    }

    @Test("shutting down turns readiness 503 at once")
    func shuttingDown() async throws {
        let fixture = try await WireFixture.start(rows: 1, seed: 1)
        #expect(await fixture.server.health().isReady)
        await fixture.server.shutDown()
        let health = await fixture.server.health()
        #expect(health.notReady == [.shuttingDown])
        await fixture.stop()
    }
}
