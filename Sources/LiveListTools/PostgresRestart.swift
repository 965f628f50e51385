import Foundation
import ListDiff
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerPostgres
import LiveListWire
import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres

/// `pg.restart`: two server instances (each with a persistent slot of its own, as an operator
/// runs them) and 200 subscribers, while another session commits 50 times a second; PostgreSQL is
/// restarted 20 times, 6 of them a second restart 1–3 s after the first. Measured for each
/// restart: from PostgreSQL accepting connections again to every subscription holding the first
/// commit made after that — the latest version, as a user waits for it. `stuck`: subscriptions not
/// there within 30 s; `lost`: lists that differ from the SELECT once the writes stop. Needs the
/// throwaway cluster (a server given by URL is not restarted).
enum PostgresRestart {
    static let name = "pg.restart"
    static let subscribers = 200
    static let commitsPerSecond = 50
    static let restarts = 20
    static let doubles = 6
    static let window = 0..<40
    static let catchUpBound: Duration = .seconds(30)

    /// One restart's figure: how long after PostgreSQL accepted connections every subscription
    /// held a commit made after it (`nil`: not within the bound, or a second restart came first).
    struct Recovery {
        var after: Duration?
        var interrupted: Bool
        var behind: Int
    }

    static func run(_ configuration: PostgresConnection.Configuration) async throws -> BenchResult {
        _ = WireFanout.raiseDescriptorLimit()
        let setup = try await PostgresBenchmarks.connect(configuration, id: 31)
        do {
            try await PostgresBenchmarks.execute(setup, "DROP TABLE IF EXISTS restart_item")
            try await PostgresBenchmarks.execute(setup, "CREATE TABLE restart_item (id bigint PRIMARY KEY, name text COLLATE \"C\" NOT NULL, tick bigint NOT NULL)")
            try await PostgresBenchmarks.execute(setup, "INSERT INTO restart_item SELECT g, substr(md5(g::text), 1, 10), 0 FROM generate_series(0, 2000) g")
            try await setup.close()
        } catch {
            try? await setup.close()
            throw error
        }
        let slots = (0..<2).map { "livelist_bench_restart_\($0)_\(UInt32.random(in: 0...UInt32.max))" }
        var instances: [(PostgresLiveDatabase, WireServer)] = []
        var clients: [Subscriber] = []
        func shutDown() async {
            for client in clients { client.close() }
            for (database, server) in instances {
                await server.shutDown()
                await database.close()
            }
            await dropSlots(configuration, slots)
        }
        do {
            for slot in slots {
                let database = try await PostgresLiveDatabase.connect(configuration, slot: .persistent(slot), logger: PostgresBenchmarks.logger)
                let server = LiveListServer(engine: PostgresEngine(database: database), queries: [
                    PublishedQuery(name: "items", sql: "SELECT id, name, tick FROM restart_item ORDER BY id"),
                ], logger: PostgresBenchmarks.logger)
                instances.append((database, try await WireServer.start(server, logger: PostgresBenchmarks.logger)))
            }
            for index in 0..<subscribers { clients.append(try await Subscriber(url: instances[index % 2].1.url)) }
            let result = try await measure(configuration, clients)
            await shutDown()
            return result
        } catch {
            await shutDown()
            throw error
        }
    }

    private static func measure(_ configuration: PostgresConnection.Configuration, _ clients: [Subscriber]) async throws -> BenchResult {
        let writer = Writer(configuration, every: .milliseconds(1_000 / commitsPerSecond))
        var recoveries: [Recovery] = []
        var random = SeededRandomNumberGenerator(seed: 61)
        let doubled = Set((0..<(restarts - doubles)).shuffled(using: &random).prefix(doubles))
        do {
            guard try await waitForAll(clients, toHold: 1, within: .seconds(60)) == nil else {
                throw BenchFailure("\(name): the subscribers' first states did not come within 60 s")
            }
            var cycle = 0
            while recoveries.count < restarts {
                try await PostgresCluster.restart()
                var accepted = ContinuousClock.now
                var target = try await writer.firstTick(after: accepted)
                if doubled.contains(cycle), recoveries.count + 1 < restarts {
                    // The operator's case: a second restart while the first is being recovered from.
                    let apart = Duration.milliseconds(1_000 + Int(random.next(upperBound: UInt64(2_000))))
                    let behind = try await waitForAll(clients, toHold: target, within: apart - accepted.duration(to: .now))
                    recoveries.append(Recovery(after: behind == nil ? accepted.duration(to: .now) : nil, interrupted: behind != nil, behind: 0))
                    try await Task.sleep(until: accepted + apart)
                    try await PostgresCluster.restart()
                    accepted = ContinuousClock.now
                    target = try await writer.firstTick(after: accepted)
                }
                let behind = try await waitForAll(clients, toHold: target, within: catchUpBound - accepted.duration(to: .now))
                recoveries.append(Recovery(after: behind == nil ? accepted.duration(to: .now) : nil, interrupted: false, behind: behind ?? 0))
                cycle += 1
                try await Task.sleep(for: .seconds(1))
            }
        } catch {
            _ = await writer.stop()
            throw error
        }
        let written = await writer.stop()
        let lost = try await settle(configuration, clients)
        let times = recoveries.compactMap(\.after).map(Stopwatch.milliseconds)
        let stuck = recoveries.filter { !$0.interrupted && $0.after == nil }
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(times), runs: times.count)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(times, 0.99))))
        result.add("max_ms", .double(BenchResult.rounded(times.max() ?? .nan)))
        result.add("restarts", .integer(Int64(recoveries.count)))
        result.add("interrupted", .integer(Int64(recoveries.filter(\.interrupted).count)))
        result.add("stuck", .integer(Int64(stuck.reduce(0) { $0 + $1.behind })))
        result.add("lost", .integer(Int64(lost)))
        result.add("commits", .integer(Int64(written.committed)))
        result.add("failed_commits", .integer(Int64(written.failed)))
        result.add("subscribers", .integer(Int64(clients.count)))
        result.add("resets", .integer(Int64(clients.reduce(0) { $0 + $1.figures.resets })))
        result.add("query_failed", .integer(Int64(clients.reduce(0) { $0 + $1.figures.failures })))
        let met = stuck.isEmpty && lost == 0 && !times.isEmpty && LiveQueryBenchmarks.percentile(times, 0.99) <= 5_000
        result.add("budget_met", .bool(met))
        result.add("setup", .string("2 instances in the bench process (persistent slots), \(clients.count) subscribers (windows of \(window.count) rows, half on each), "
                                   + "\(commitsPerSecond) commits/s; PostgreSQL restarted \(recoveries.count) times (fast mode), \(doubles) of them 1–3 s after another"))
        result.notes.append("budget (p99 from PostgreSQL accepting connections to every subscription holding a commit made after it ≤ 5 s; stuck 0; lost 0): " + (met ? "met" : "missed"))
        result.notes.append("interrupted: first restarts of a pair whose recovery the second restart cut (not in the times); stuck: subscriptions not there within \(catchUpBound)")
        return result
    }

    /// Waits until every subscriber holds `tick` or later; the number still short of it when
    /// `bound` ran out (`nil`: none).
    private static func waitForAll(_ clients: [Subscriber], toHold tick: Int64, within bound: Duration) async throws -> Int? {
        let deadline = ContinuousClock.now + bound
        while true {
            let behind = clients.count(where: { $0.figures.tick < tick })
            if behind == 0 { return nil }
            if ContinuousClock.now >= deadline { return behind }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The writes stopped: how many subscribers' lists still differ from the SELECT 15 s later.
    private static func settle(_ configuration: PostgresConnection.Configuration, _ clients: [Subscriber]) async throws -> Int {
        let reader = try await PostgresBenchmarks.connect(configuration, id: 32)
        defer { Task { try? await reader.close() } }
        var expected: [[WireValue]] = []
        let rows = try await reader.query(PostgresQuery(unsafeSQL: "SELECT id, name, tick FROM restart_item ORDER BY id"), logger: PostgresBenchmarks.logger)
        for try await (id, name, tick) in rows.decode((Int64, String, Int64).self) { expected.append([.integer(id), .text(name), .integer(tick)]) }
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            let differing = clients.count(where: { !$0.holds(expected) })
            if differing == 0 || ContinuousClock.now >= deadline { return differing }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private static func dropSlots(_ configuration: PostgresConnection.Configuration, _ slots: [String]) async {
        guard let connection = try? await PostgresBenchmarks.connect(configuration, id: 33) else { return }
        for slot in slots {
            _ = try? await connection.query(PostgresQuery(unsafeSQL: "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '\(slot)'"),
                                            logger: PostgresBenchmarks.logger)
        }
        try? await connection.close()
    }

    /// One subscriber: a connection, the list model a Swift client keeps, and the tick of row 0
    /// (the writer counts its commits there) as the model holds it.
    final class Subscriber: Sendable {
        struct Figures {
            var model = RemoteListModel()
            var tick: Int64 = -1
            var resets = 0
            var failures = 0
            var broken: String?
        }

        private let connection: RemoteConnection
        private let state = Locked(Figures())
        private let reading: Locked<Task<Void, Never>?> = Locked(nil)

        init(url: String) async throws {
            connection = try await WebSocketTransport().connect(to: url)
            state.withLock { $0.model.didSubscribe(window: PostgresRestart.window) }
            connection.send(ClientMessage.subscribe(WireSubscription(sub: 1, query: "items", window: WireWindow(PostgresRestart.window))).encoded())
            let frames = connection.frames, state = state
            reading.withLock { $0 = Task { await Self.read(frames, into: state) } }
        }

        private static func read(_ frames: AsyncThrowingStream<String, any Error>, into state: Locked<Figures>) async {
            do {
                for try await frame in frames {
                    let message = try ServerMessage.decode(Array(frame.utf8))
                    state.withLock { figures in
                        if case .reset = message { figures.resets += 1 }
                        do {
                            _ = try figures.model.receive(message)
                        } catch {
                            // queryFailed during an outage: the subscription goes on.
                            if case .server? = error as? RemoteListError { figures.failures += 1 } else { figures.broken = "\(error)" }
                        }
                        if figures.model.state.count > 0, let record = figures.model.record(for: figures.model.state.row(at: 0)),
                           record.values.count == 3, case let .integer(tick) = record.values[2], tick > figures.tick {
                            figures.tick = tick
                        }
                    }
                }
            } catch {
                state.withLock { $0.broken = "\(error)" }
            }
        }

        var figures: (tick: Int64, resets: Int, failures: Int) {
            state.withLock { ($0.broken == nil ? $0.tick : -1, $0.resets, $0.failures) }
        }

        /// Whether the list held equals `rows` (the whole result, in order): its count, and the
        /// window's rows with their values.
        func holds(_ rows: [[WireValue]]) -> Bool {
            state.withLock { figures in
                guard figures.broken == nil, let held = figures.model.heldList(), held.sections.reduce(0, { $0 + $1.count }) == rows.count else { return false }
                let range = PostgresRestart.window.clamped(to: 0..<rows.count)
                guard held.rows.count == range.count else { return false }
                return zip(held.rows, rows[range]).allSatisfy { $0.values == $1 }
            }
        }

        func close() {
            reading.withLock { $0?.cancel() }
            connection.close()
        }
    }

    /// Commits `commitsPerSecond` times a second on a connection of its own — each commit counts
    /// up row 0's tick and changes one other row — connecting again whenever PostgreSQL went
    /// away. A commit that does not answer within 5 s is given up with its connection.
    actor Writer {
        private var ticks: [(at: ContinuousClock.Instant, tick: Int64)] = []
        private var committed = 0
        private var failed = 0
        private var stopped = false
        private var task: Task<Void, Never>?

        init(_ configuration: PostgresConnection.Configuration, every interval: Duration) {
            Task { await self.begin(configuration, every: interval) }
        }

        private func begin(_ configuration: PostgresConnection.Configuration, every interval: Duration) {
            task = Task { await self.loop(configuration, every: interval) }
        }

        private func loop(_ configuration: PostgresConnection.Configuration, every interval: Duration) async {
            var random = SeededRandomNumberGenerator(seed: 67)
            var connection: PostgresConnection?
            var next = ContinuousClock.now
            while !stopped {
                next += interval
                do {
                    if connection == nil || connection?.isClosed == true {
                        connection = try await PostgresBenchmarks.connect(configuration, id: 34)
                    }
                    guard let open = connection else { continue }
                    let key = Int64(random.next(upperBound: UInt64(3_000)) + 1), name = "n\(random.next(upperBound: UInt64(1_000_000)))"
                    let change = switch random.next(upperBound: UInt64(3)) {
                    case 0: "UPDATE restart_item SET name = '\(name)' WHERE id = \(key)"
                    case 1: "INSERT INTO restart_item VALUES (\(key), '\(name)', 0) ON CONFLICT (id) DO UPDATE SET name = excluded.name"
                    default: "DELETE FROM restart_item WHERE id = \(key)"
                    }
                    let sql = "WITH other AS (\(change) RETURNING 1) UPDATE restart_item SET tick = tick + 1 WHERE id = 0 RETURNING tick"
                    guard let tick = await Self.within(.seconds(5), { try await Self.commit(open, sql) }) else {
                        try? await open.close()
                        connection = nil
                        failed += 1
                        continue
                    }
                    ticks.append((.now, tick))
                    committed += 1
                } catch {
                    failed += 1
                    try? await connection?.close()
                    connection = nil
                }
                try? await Task.sleep(until: max(next, .now))
            }
            try? await connection?.close()
        }

        private static func commit(_ connection: PostgresConnection, _ sql: String) async throws -> Int64 {
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresBenchmarks.logger)
            for try await tick in rows.decode(Int64.self) { return tick }
            throw BenchFailure("\(PostgresRestart.name): the tick's update returned no row")
        }

        /// `work`'s value, or `nil` when it failed or did not finish within `bound` (then left to
        /// run: a query on a connection a restart cut has been seen never to end in postgres-nio).
        private static func within<T: Sendable>(_ bound: Duration, _ work: @escaping @Sendable () async throws -> T) async -> T? {
            let once = Locked(false)
            return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
                let finish: @Sendable (T?) -> Void = { value in
                    let first = once.withLock { done in
                        defer { done = true }
                        return !done
                    }
                    if first { continuation.resume(returning: value) }
                }
                Task { finish(try? await work()) }
                Task {
                    try? await Task.sleep(for: bound)
                    finish(nil)
                }
            }
        }

        /// The tick of the first commit made after `instant` (waits up to 30 s for it).
        func firstTick(after instant: ContinuousClock.Instant) async throws -> Int64 {
            let deadline = instant + .seconds(30)
            while ContinuousClock.now < deadline {
                if let first = ticks.last(where: { $0.at > instant }) {
                    return ticks.first(where: { $0.at > instant })?.tick ?? first.tick
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            throw BenchFailure("\(PostgresRestart.name): no commit within 30 s of PostgreSQL accepting connections (\(failed) attempts failed)")
        }

        func stop() async -> (committed: Int, failed: Int) {
            stopped = true
            if let task {
                _ = await Self.within(.seconds(10)) { await task.value }
            }
            return (committed, failed)
        }
    }
}
