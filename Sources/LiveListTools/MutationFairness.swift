import Foundation
import ListDiff
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerPostgres
import LiveListWire
import LiveQueryPostgres
import PostgresNIO

/// `wire.mutate.fairness` (SQLite, from ``MutationBenchmarks``) and `pg.mutate.fairness`
/// (``runPostgres(quick:filter:url:)``): one connection keeps its mutation queue full (256 waiting), another
/// sends one mutation at a time and waits for its `mutated`: the bystander's times with the flood
/// and without it, in the same run, over any server (the SQLite one of `wire.mutate.*`, or a
/// PostgreSQL one) that publishes the `items` query and the `rename` mutation.
public enum MutationFairness {
    /// What one run measured.
    struct Figures {
        var quiet: [Double]
        var flooded: [Double]
        /// The flooder's mutations applied while the bystander's ran.
        var floodApplied: Int
        /// The flooder's mutations refused (`mutationUnavailable`: its queue was full).
        var floodRefused: Int
    }

    /// The flooder's mutations waiting on its connection at most: the server's per-connection
    /// limit (`maximumPendingMutations`), one more running.
    static let floodDepth = 256
    /// Quiet and flooded blocks, alternating.
    static let blocks = 8

    /// Measures `runs` bystander mutations without the flood, then `runs` with it, on `url`;
    /// `rows`: the ids `rename` may pick (1 … rows).
    static func measure(url: String, rows: Int, runs: Int) async throws -> Figures {
        let bystander = try await Wire(url, client: "fairness-bystander-\(UUID().uuidString)")
        defer { bystander.close() }
        // The bystander shows the list, as an app does: its `mutated` waits for the list's commit.
        bystander.send(.subscribe(WireSubscription(sub: 1, query: "items", window: WireWindow(start: 0, count: 50))))
        _ = try await bystander.next(within: 30) { if case .reset = $0 { true } else { false } }
        var random = SeededRandomNumberGenerator(seed: 53)
        func timed(_ count: Int) async throws -> [Double] {
            var times: [Double] = []
            let clock = ContinuousClock()
            for _ in 0..<count {
                let start = clock.now
                let id = bystander.nextID()
                bystander.send(.mutate(WireMutation(client: bystander.client, id: id, name: "rename", arguments: [
                    "id": .integer(Int64.random(in: 1...Int64(rows), using: &random)), "name": .text("b\(id)"),
                ])))
                let answer = try await bystander.next(within: 30) { $0.answers(id) }
                guard case .mutated = answer else { throw BenchFailure("wire.mutate.fairness: the bystander's mutation \(id): \(answer)") }
                times.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            }
            return times
        }
        _ = try await timed(5)   // warm: the connection and the statements
        // Quiet and flooded runs alternate in blocks, so that whatever else the machine does
        // meanwhile weighs on both alike.
        let flooder = try await Wire(url, client: "fairness-flooder-\(UUID().uuidString)")
        defer { flooder.close() }
        var quiet: [Double] = [], flooded: [Double] = []
        var applied = 0
        for _ in 0..<blocks {
            // Not timed: what the flood before left behind (its commits still on their way to the
            // bystander's list, a checkpoint of its WAL) is the flood's cost, not the quiet's.
            _ = try await timed(5)
            quiet += try await timed(runs / blocks)
            flooder.resume()
            let flooding = Task { try await Self.flood(flooder, rows: rows) }
            // The flood under way: its first answers came.
            let answered = flooder.counts.answered
            let floodDeadline = ContinuousClock.now + .seconds(30)
            while flooder.counts.answered < answered + 20 {
                guard ContinuousClock.now < floodDeadline else { throw BenchFailure("wire.mutate.fairness: the flood's first answers did not come within 30 s") }
                try await Task.sleep(for: .milliseconds(1))
            }
            let before = flooder.counts
            flooded += try await timed(runs / blocks)
            applied += flooder.counts.applied - before.applied
            flooder.stop()
            try await flooding.value
        }
        return Figures(quiet: quiet, flooded: flooded, floodApplied: applied, floodRefused: flooder.counts.refused)
    }

    /// `pg.mutate.fairness`, when `filter` selects it (not with `quick` alone): the same over a
    /// PostgreSQL server — the pg.* benchmarks' database (`url`, or a throwaway cluster's), a
    /// 10,000-row table of its own.
    public static func runPostgres(quick: Bool, filter: String?, url: String?) async throws -> [BenchResult] {
        let name = "pg.mutate.fairness"
        guard filter.map({ name.hasPrefix($0) }) ?? !quick else { return [] }
        let rows = 10_000
        let (configuration, _) = try await PostgresBenchmarks.database(url: url)
        let writer = try await PostgresBenchmarks.connect(configuration)
        do {
            try await PostgresBenchmarks.execute(writer, "DROP TABLE IF EXISTS bench_fairness_item")
            try await PostgresBenchmarks.execute(writer, """
                CREATE TABLE bench_fairness_item (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL, flag integer NOT NULL, version integer NOT NULL DEFAULT 0)
                """)
            try await PostgresBenchmarks.execute(writer, "INSERT INTO bench_fairness_item SELECT g, substr(md5(g::text), 1, 12), g % 2, 0 FROM generate_series(1, \(rows)) g")
            try await writer.close()
        } catch {
            try? await writer.close()
            throw error
        }
        let database = try await PostgresLiveDatabase.connect(configuration, logger: PostgresBenchmarks.logger)
        let engine = PostgresEngine(database: database)
        let rename = PublishedMutation(
            name: "rename", parameters: [QueryParameter("id", type: .integer), QueryParameter("name", type: .text)],
            statements: [.init("UPDATE bench_fairness_item SET name = :name, version = version + 1 WHERE id = :id", mustChangeRows: true)])
        let server = LiveListServer(engine: engine, queries: [
            PublishedQuery(name: "items", sql: "SELECT id, name, version FROM bench_fairness_item WHERE flag = 1 ORDER BY name", version: "version"),
        ], mutations: [rename], logger: PostgresBenchmarks.logger)
        let served = try await WireServer.start(server, logger: PostgresBenchmarks.logger)
        let figures: Figures
        do {
            figures = try await measure(url: served.url, rows: rows, runs: quick ? 200 : 800)
        } catch {
            await served.shutDown()
            await engine.close()
            await database.close()
            throw error
        }
        await served.shutDown()
        await engine.close()
        await database.close()
        return [result(figures, name: name, setup:
            "LiveListServer (PostgreSQL, \(rows) rows), loopback, one process: a bystander subscribed to `items` renames a row at a time; a flooder keeps 256 renames waiting")]
    }

    /// The benchmark's result: the bystander's median with the flood, its p99s, the ratio of the
    /// p99s (budget ≤ 2).
    static func result(_ figures: Figures, name: String, setup: String) -> BenchResult {
        let quietP99 = LiveQueryBenchmarks.percentile(figures.quiet, 0.99)
        let floodedP99 = LiveQueryBenchmarks.percentile(figures.flooded, 0.99)
        let ratio = quietP99 > 0 ? floodedP99 / quietP99 : .infinity
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(figures.flooded), runs: figures.flooded.count)
        result.add("p90_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(figures.flooded, 0.9))))
        result.add("p99_ms", .double(BenchResult.rounded(floodedP99)))
        result.add("max_ms", .double(BenchResult.rounded(figures.flooded.max() ?? .nan)))
        result.add("quiet_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(figures.quiet))))
        result.add("quiet_p90_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(figures.quiet, 0.9))))
        result.add("quiet_p99_ms", .double(BenchResult.rounded(quietP99)))
        result.add("quiet_max_ms", .double(BenchResult.rounded(figures.quiet.max() ?? .nan)))
        result.add("p99_ratio", .double(BenchResult.rounded(ratio)))
        result.add("flood_applied", .integer(Int64(figures.floodApplied)))
        result.add("flood_refused", .integer(Int64(figures.floodRefused)))
        result.add("setup", .string(setup))
        let met = ratio <= 2
        result.add("budget_met", .bool(met))
        result.notes.append("budget (the bystander's p99 with the flood ≤ 2× its quiet p99): " + (met ? "met" : "missed"))
        result.notes.append("median_ms, p99_ms: the bystander's mutation (sent → mutated) while another connection keeps \(floodDepth) mutations waiting; quiet_*: the same, alone, in blocks alternating with the flooded ones (\(blocks) each); flood_applied: the flooder's mutations applied meanwhile")
        return result
    }

    /// Keeps `floodDepth` mutations outstanding on `wire` until it is told to stop, then waits for
    /// the answers of those sent.
    private static func flood(_ wire: Wire, rows: Int) async throws {
        var random = SeededRandomNumberGenerator(seed: 59)
        func sendOne() {
            let id = wire.nextID()
            wire.send(.mutate(WireMutation(client: wire.client, id: id, name: "rename", arguments: [
                "id": .integer(Int64.random(in: 1...Int64(rows), using: &random)), "name": .text("f\(id)"),
            ])))
        }
        for _ in 0..<floodDepth { sendOne() }
        var outstanding = floodDepth
        while outstanding > 0 {
            let answer = try await wire.next(within: 60) { if case .mutated = $0 { true } else if case .error = $0 { true } else { false } }
            outstanding -= 1
            wire.count(answer)
            if !wire.isStopped {
                sendOne()
                outstanding += 1
            }
        }
    }

    /// One connection, its frames read in order, its mutations numbered.
    final class Wire: @unchecked Sendable {
        // `@unchecked Sendable`: `iterator` is used by one task at a time (the one that measures or
        // floods); `state` is a `Locked` value.
        let client: String
        private let connection: RemoteConnection
        private var iterator: AsyncThrowingStream<String, any Error>.Iterator
        private let state = Locked((id: Int64(0), answered: 0, applied: 0, refused: 0, stopped: false))

        init(_ url: String, client: String) async throws {
            self.client = client
            connection = try await WebSocketTransport().connect(to: url)
            iterator = connection.frames.makeAsyncIterator()
        }

        func send(_ message: ClientMessage) { connection.send(message.encoded()) }
        func close() { connection.close() }

        func nextID() -> Int64 {
            state.withLock { state in
                state.id += 1
                return state.id
            }
        }

        var counts: (answered: Int, applied: Int, refused: Int) { state.withLock { ($0.answered, $0.applied, $0.refused) } }
        var isStopped: Bool { state.withLock { $0.stopped } }
        func stop() { state.withLock { $0.stopped = true } }
        func resume() { state.withLock { $0.stopped = false } }

        func count(_ answer: ServerMessage) {
            state.withLock { state in
                state.answered += 1
                switch answer {
                case .mutated: state.applied += 1
                default: state.refused += 1
                }
            }
        }

        /// The next message `matches` accepts (others are skipped), within `seconds`.
        func next(within seconds: Double, _ matches: (ServerMessage) -> Bool) async throws -> ServerMessage {
            let deadline = ContinuousClock.now + .seconds(seconds)
            let timer = Task { [connection] in
                try await Task.sleep(until: deadline)
                connection.close()
            }
            defer { timer.cancel() }
            while let frame = try await iterator.next() {
                let message = try ServerMessage.decode(Array(frame.utf8))
                if matches(message) { return message }
            }
            throw BenchFailure("wire.mutate.fairness: the connection ended (or nothing came within \(seconds) s)")
        }
    }
}

extension ServerMessage {
    /// Whether it answers the mutation numbered `id`.
    fileprivate func answers(_ id: Int64) -> Bool {
        switch self {
        case let .mutated(mutated): mutated.id == id
        case let .error(error): error.mutation?.id == id
        default: false
        }
    }
}
