import Foundation
import ListDiff
import ListTesting
import LiveListClient
import LiveListWire
import PostgresNIO
import ScratchPostgres
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Commits random transactions on a connection of its own until stopped, connecting again
/// whenever PostgreSQL goes away (a restart): the writes an operator's database takes throughout.
final class BackgroundWriter: Sendable {
    private let state = Locked((stopped: false, committed: 0, failed: 0))
    private let task: Task<Void, Never>

    init(_ configuration: PostgresConnection.Configuration, seed: UInt64, every interval: Duration) {
        let state = state
        task = Task {
            var random = SeededRandomNumberGenerator(seed: seed)
            var connection: PostgresConnection?
            while !state.withLock({ $0.stopped }) {
                do {
                    if connection == nil || connection?.isClosed == true {
                        connection = try await PostgresConnection.connect(configuration: configuration, id: 20, logger: PostgresCluster.logger)
                    }
                    guard let connection else { continue }
                    let statements = PostgresFaultOracleTests.randomStatements(&random)
                    try await connection.query("BEGIN", logger: PostgresCluster.logger)
                    do {
                        for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
                        try await connection.query("COMMIT", logger: PostgresCluster.logger)
                        state.withLock { $0.committed += 1 }
                    } catch let error as PSQLError where error.serverInfo != nil {
                        // A key update that collides: rolled back, the connection lives on.
                        _ = try? await connection.query("ROLLBACK", logger: PostgresCluster.logger)
                    }
                } catch {
                    state.withLock { $0.failed += 1 }
                    try? await connection?.close()
                    connection = nil
                }
                try? await Task.sleep(for: interval)
            }
            try? await connection?.close()
        }
    }

    /// Stops after the transaction under way — or gives up on it after 10 s: a query on a
    /// connection the restart cut has been seen to wait forever in postgres-nio (the task is then
    /// left to the process's end) — and returns what it committed and the attempts that failed.
    func stop() async -> (committed: Int, failed: Int) {
        state.withLock { $0.stopped = true }
        let task = task
        // Not a task group: it would wait for a child that never ends.
        let resumed = Locked(false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once: @Sendable () -> Void = {
                let first = resumed.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume() }
            }
            Task {
                await task.value
                once()
            }
            Task {
                try? await Task.sleep(for: .seconds(10))
                once()
            }
        }
        return state.withLock { ($0.committed, $0.failed) }
    }
}

/// What made an instance stall silently for over a minute in an operator's run: PostgreSQL
/// restarted twice a few seconds apart while writes went on, two instances serving. Repeated, with
/// the SELECT as the oracle: after each double restart every client of both instances equals the
/// SELECT within seconds, and readiness is 200 again on both — no instance left behind.
/// `LIVELIST_RESTART_CYCLES` runs more cycles than CI's three.
@Suite("PostgreSQL restarted twice within seconds", .serialized, .timeLimit(.minutes(6)),
       .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
struct PostgresRestartTests {
    @Test("two instances, PostgreSQL restarted twice a few seconds apart under writes, cycle after cycle: every client equals the SELECT within 15 s and readiness is 200 on both")
    @MainActor
    func doubleRestarts() async throws {
        try await PostgresFaultOracleTests.withDatabase(Self.run)
    }

    @MainActor
    static func run(_ cluster: PostgresCluster.Running, _ configuration: PostgresConnection.Configuration, _ writer: inout PostgresConnection) async throws {
        let instances = try await PostgresFaultOracleTests.startInstances(cluster, configuration, writer, slotPrefix: "livelist_r")
        defer { for instance in instances { instance.kill() } }
        let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL double restarts")
        var random = SeededRandomNumberGenerator(seed: seed)
        var clients: [(client: WireClient, query: PostgresFaultOracleTests.Query, home: Int)] = []
        for (index, query) in PostgresFaultOracleTests.queries.enumerated() {
            for home in 0..<2 {
                let window = index % 2 == 0 ? 0..<400 : 40..<100
                let client = WireClient(url: instances[home].url, query: query.name, viewportRows: 10, window: window)
                if window.lowerBound > 0 { client.view.setContentOffset(window.lowerBound) }
                clients.append((client, query, home))
            }
        }

        @MainActor func settle(_ step: String, within seconds: Double) async throws -> Duration {
            var oracles: [String: (sections: [WireSection], rows: [[WireValue]])] = [:]
            for query in PostgresFaultOracleTests.queries { oracles[query.name] = try await PostgresFaultOracleTests.select(query, writer) }
            let started = ContinuousClock.now
            do {
                try await eventually("\(step): every client equals the SELECT (seed \(seed))", seconds: seconds) {
                    clients.allSatisfy { $0.client.matches(oracles[$0.query.name] ?? ([], [])) }
                }
            } catch {
                for entry in clients {
                    let mismatch = entry.client.mismatch(oracles[entry.query.name] ?? ([], []))
                    Issue.record("\(step): \(entry.query.name) on instance \(entry.home): \(mismatch ?? "equal"), \(entry.client.remote.connectionState)")
                }
                for (index, instance) in instances.enumerated() { print("instance \(index) log:\n\(instance.log.suffix(6_000))") }
                throw error
            }
            for entry in clients { #expect(entry.client.view.violations.isEmpty, "\(step): \(entry.query.name): \(entry.client.view.violations)") }
            return started.duration(to: .now)
        }

        _ = try await settle("first states", within: 60)
        let cycles = ProcessInfo.processInfo.environment["LIVELIST_RESTART_CYCLES"].flatMap(Int.init) ?? 3
        var figures: [String] = []
        for cycle in 0..<cycles {
            let background = BackgroundWriter(configuration, seed: seed &+ UInt64(cycle), every: .milliseconds(40))
            try await Task.sleep(for: .milliseconds(500))
            try await PostgresCluster.restart()
            let apart = Duration.milliseconds(1_000 + random.next(upTo: 5_000))
            try await Task.sleep(for: apart)
            try await PostgresCluster.restart()
            let back = ContinuousClock.now
            try await Task.sleep(for: .seconds(1))
            let written = await background.stop()
            try? await writer.close()
            writer = try await PostgresConnection.connect(configuration: configuration, id: 9, logger: PostgresCluster.logger)
            let settled = try await settle("cycle \(cycle), restarts \(apart) apart", within: 15)
            var ready: [Duration?] = [nil, nil]
            let deadline = ContinuousClock.now + .seconds(15)
            while ready.contains(where: { $0 == nil }), ContinuousClock.now < deadline {
                for index in instances.indices where ready[index] == nil {
                    if await instances[index].readiness() == 200 { ready[index] = back.duration(to: .now) }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(!ready.contains { $0 == nil }, "cycle \(cycle): readiness 200 on both instances within 15 s: \(ready)")
            // What each slot still holds: a slot whose position does not follow would replay more after every restart.
            var held: [String] = []
            let slots = try await writer.query(PostgresQuery(unsafeSQL: "SELECT slot_name::text, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::int8 "
                + "FROM pg_replication_slots WHERE database = current_database() ORDER BY slot_name"), logger: PostgresCluster.logger)
            for try await (slot, bytes) in slots.decode((String, Int64).self) { held.append("\(slot.prefix(11)) \(bytes) B") }
            figures.append("cycle \(cycle): restarts \(apart) apart, \(written.committed) commits (\(written.failed) failed attempts), "
                           + "lists equal \(settled) after the writes stopped, ready after \(ready.map { $0.map { "\($0)" } ?? "never" }), slots behind \(held)")
            print(figures[figures.count - 1])
        }
        print("PostgreSQL double restarts (seed \(seed)): \(figures.count) cycles")
        for entry in clients { entry.client.remote.stop() }
        for instance in instances { #expect(await instance.terminate() == 0, "a graceful shutdown on SIGTERM: \(instance.log.suffix(2_000))") }
        try await writer.query(PostgresQuery(unsafeSQL: "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()"),
                               logger: PostgresCluster.logger)
    }
}
