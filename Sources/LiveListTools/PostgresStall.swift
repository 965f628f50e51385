import Foundation
import LiveListServer
import LiveListServerPostgres
import LiveQueryCore
import LiveQueryPostgres
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// `pg.stall`: the walsender of one instance's replication stream stopped (SIGSTOP) for 10 s while
/// another session commits ten times a second, three times. Reported: when readiness — the same
/// decision `GET /live/health/ready` makes, with the server's default limits — turns red after
/// the stop and green after the continue (medians and maxima, budget ≤ 5 s each), and whether the
/// list equals the SELECT after each stall. Needs to signal PostgreSQL's processes (root, or the
/// server's own user).
enum PostgresStall {
    static let name = "pg.stall"
    static let stalls = 3
    static let stallFor: Duration = .seconds(10)

    struct Stall {
        var redAfter: Duration?
        var greenAfter: Duration?
        var exact: Bool
    }

    static func run(_ configuration: PostgresConnection.Configuration, writer: PostgresConnection) async throws -> BenchResult {
        try await PostgresBenchmarks.execute(writer, "DROP TABLE IF EXISTS stall_item")
        try await PostgresBenchmarks.execute(writer, "CREATE TABLE stall_item (id bigint PRIMARY KEY, rank integer NOT NULL)")
        try await PostgresBenchmarks.execute(writer, "INSERT INTO stall_item SELECT g, g % 97 FROM generate_series(1, 1000) g")
        let database = try await PostgresLiveDatabase.connect(configuration, logger: PostgresBenchmarks.logger)
        let engine = PostgresEngine(database: database)
        let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "stall_item", as: Int64.self, sort: [SortTerm("rank")]),
                                                     in: database)
        var stalls: [Stall] = []
        do {
            var next: Int64 = 10_000
            for _ in 0..<Self.stalls {
                _ = try await query.upToDate()
                stalls.append(try await stall(engine, writer, query, next: &next))
            }
        } catch {
            await query.cancel()
            await database.close()
            throw error
        }
        await query.cancel()
        await engine.close()
        await database.close()
        let reds = stalls.compactMap(\.redAfter).map(Stopwatch.milliseconds), greens = stalls.compactMap(\.greenAfter).map(Stopwatch.milliseconds)
        guard reds.count == stalls.count, greens.count == stalls.count else {
            throw BenchFailure("\(name): readiness did not turn red and green again in every stall: \(stalls)")
        }
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(reds), runs: stalls.count)
        result.add("red_after_stop_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(reds))))
        result.add("red_after_stop_max_ms", .double(BenchResult.rounded(reds.max() ?? 0)))
        result.add("green_after_continue_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(greens))))
        result.add("green_after_continue_max_ms", .double(BenchResult.rounded(greens.max() ?? 0)))
        result.add("stall_s", .integer(stallFor.components.seconds))
        result.add("exact_after", .integer(Int64(stalls.filter(\.exact).count)))
        result.notes.append("readiness limit \(LiveListServer.Configuration().maximumLag), 10 commits/s during each stall")
        return result
    }

    /// Whether readiness, as the server decides it, is green now.
    static func isReady(_ engine: PostgresEngine) async -> Bool {
        let defaults = LiveListServer.Configuration()
        let capture = await engine.changeCapture()
        return LiveListHealth.assess(capture: capture, failingQueries: [:], shuttingDown: false,
                                     limits: .init(lag: defaults.maximumLag, lagBytes: defaults.maximumLagBytes), at: .now).isEmpty
    }

    static func stall(_ engine: PostgresEngine, _ writer: PostgresConnection, _ query: PostgresLiveQuery<Int64>, next: inout Int64) async throws -> Stall {
        var pids: [Int64] = []
        let rows = try await writer.query(PostgresQuery(unsafeSQL: """
            SELECT pid::int8 FROM pg_stat_activity WHERE backend_type = 'walsender' AND application_name = 'livelist' AND datname = current_database()
            """), logger: PostgresBenchmarks.logger)
        for try await pid in rows.decode(Int64.self) { pids.append(pid) }
        guard pids.count == 1, let pid = pids.first else { throw BenchFailure("\(name): expected one walsender for the database, found \(pids)") }
        guard await isReady(engine) else { throw BenchFailure("\(name): not ready before the stall") }
        var stall = Stall(exact: false)
        let stopped = ContinuousClock.now
        guard kill(pid_t(pid), SIGSTOP) == 0 else { throw BenchFailure("\(name): cannot stop the walsender (errno \(errno)): run as root") }
        while stopped.duration(to: .now) < stallFor {
            try await PostgresBenchmarks.execute(writer, "INSERT INTO stall_item VALUES (\(next), \(next % 97))")
            next += 1
            if stall.redAfter == nil, !(await isReady(engine)) { stall.redAfter = stopped.duration(to: .now) }
            try await Task.sleep(for: .milliseconds(100))
        }
        let resumed = ContinuousClock.now
        kill(pid_t(pid), SIGCONT)
        while resumed.duration(to: .now) < .seconds(30) {
            if await isReady(engine) {
                stall.greenAfter = resumed.duration(to: .now)
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let result = try await query.upToDate()
        var expected: [Int64] = []
        for try await id in try await writer.query("SELECT id FROM stall_item ORDER BY rank, id", logger: PostgresBenchmarks.logger).decode(Int64.self) {
            expected.append(id)
        }
        stall.exact = result.rows(in: 0..<result.count).map(\.id) == expected
        return stall
    }
}
