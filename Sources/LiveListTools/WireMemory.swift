import Foundation
import GRDB
import ListTesting
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import Logging

/// `wire.memory.*`: what a served query's kept versions (the changesets kept for resuming
/// clients, with the results they lead from) cost in resident memory. One subscriber, one-row
/// commits on two paths: from the server's own connection (followed row by row) and from another
/// connection without the change log (each refetched by the server). Each commit is waited for,
/// so each is one kept version. Resident growth is read from /proc after returning freed memory
/// to the system, once keeping every version and once (the same commits) keeping none; the
/// difference, divided by the versions kept, is what a kept version costs. The server's own
/// count of their bytes is reported beside it.
public enum WireMemory {
    static let sql = "SELECT id, name, flag, version FROM item ORDER BY name"

    /// One run: the versions the server kept, the commits made, resident growth and size, the
    /// server's own count of the kept bytes, and the time the commits took.
    struct Measured {
        var versions: Int
        var commits: Int
        var residentGrowth: Int
        var resident: Int
        var countedBytes: Int
        var seconds: Double
    }

    /// The benchmark over `path`'s `item` table (`rows` rows): `commits` one-row commits on the
    /// incremental path; on the refetch path as many as `refetchSeconds` allow, up to `commits`
    /// (each is a refetch of the whole list). Every run is a fresh process (`bench --child
    /// wire-memory:…`), keeping every version or none, interleaved, `processes` of each.
    static func run(path: String, rows: Int, commits: Int, refetchSeconds: Double, processes: Int, name: String) throws -> BenchResult {
        _ = try waitFor { try await pool(path).write { db in try db.execute(sql: "CREATE INDEX IF NOT EXISTS item_name ON item(name)") } }
        func runs(external: Bool, seconds: Double) throws -> (kept: [[String: Double]], none: [[String: Double]]) {
            var kept: [[String: Double]] = [], none: [[String: Double]] = []
            for _ in 0..<processes {
                none.append(try ChildMeasurements.spawn("wire-memory:0:\(external ? 1 : 0):\(rows):\(commits):\(seconds)", database: path))
                let made = Int(none.last?["commits"] ?? Double(commits))
                kept.append(try ChildMeasurements.spawn("wire-memory:1:\(external ? 1 : 0):\(rows):\(made):\(Double.infinity)", database: path))
            }
            return (kept, none)
        }
        let incremental = try runs(external: false, seconds: .infinity)
        let refetch = try runs(external: true, seconds: refetchSeconds)
        /// What a kept version costs in resident memory: each process's growth keeping every
        /// version, less the median growth keeping none, over the versions kept (the median).
        func perVersion(_ pair: (kept: [[String: Double]], none: [[String: Double]])) -> Double {
            let control = LiveQueryBenchmarks.median(pair.none.compactMap { $0["growth"] })
            return LiveQueryBenchmarks.median(pair.kept.compactMap { run in
                guard let growth = run["growth"], let versions = run["versions"], versions > 0 else { return nil }
                return (growth - control) / versions
            })
        }
        func median(_ runs: [[String: Double]], _ key: String) -> Int64 {
            Int64(LiveQueryBenchmarks.median(runs.compactMap { $0[key] }).rounded())
        }
        let incrementalBytes = perVersion(incremental), refetchBytes = perVersion(refetch)
        var result = BenchResult(name: name, medianMilliseconds: .nan, runs: processes * 4)
        result.add("rows", .integer(Int64(rows)))
        result.add("processes", .integer(Int64(processes * 4)))
        result.add("bytes_per_kept_version", .integer(Int64(max(incrementalBytes, refetchBytes).rounded())))
        result.add("incremental_bytes_per_kept_version", .integer(Int64(incrementalBytes.rounded())))
        result.add("refetch_bytes_per_kept_version", .integer(Int64(refetchBytes.rounded())))
        result.add("incremental_resident_growth_bytes", .integer(median(incremental.kept, "growth")))
        result.add("incremental_resident_growth_bytes_keeping_none", .integer(median(incremental.none, "growth")))
        result.add("refetch_resident_growth_bytes", .integer(median(refetch.kept, "growth")))
        result.add("refetch_resident_growth_bytes_keeping_none", .integer(median(refetch.none, "growth")))
        result.add("incremental_counted_bytes_per_kept_version", .integer(median(incremental.kept, "counted_per_version")))
        result.add("refetch_counted_bytes_per_kept_version", .integer(median(refetch.kept, "counted_per_version")))
        result.add("kept_versions", .integer(median(incremental.kept, "versions") + median(refetch.kept, "versions")))
        result.add("incremental_commits", .integer(median(incremental.kept, "commits")))
        result.add("refetch_commits", .integer(median(refetch.kept, "commits")))
        result.add("refetch_ms_per_commit", .integer(median(refetch.none, "ms_per_commit")))
        result.add("resident_bytes", .integer(median(incremental.kept + refetch.kept, "resident")))
        result.add("budget_bytes_per_kept_version", .integer(16_384))
        return result
    }

    /// In a child process: one run, printed as JSON.
    @MainActor
    public static func child(_ specification: String, database path: String) throws -> String {
        let parts = specification.split(separator: ":").map(String.init)
        guard parts.count == 6, let rows = Int(parts[3]), let commits = Int(parts[4]), let seconds = Double(parts[5]) else {
            throw BenchFailure("bad wire-memory child \(specification)")
        }
        let measured = try measure(path: path, rows: rows, commits: commits, external: parts[2] == "1", seconds: seconds, keeps: parts[1] == "1")
        return #"{"growth": \#(measured.residentGrowth), "versions": \#(measured.versions), "commits": \#(measured.commits), "#
            + #""resident": \#(measured.resident), "counted_per_version": \#(measured.countedBytes / max(measured.versions, 1)), "#
            + #""ms_per_commit": \#(measured.seconds * 1_000 / Double(max(measured.commits, 1)))}"#
    }

    private static func pool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabasePool(path: path, configuration: configuration)
    }

    @MainActor
    private static func measure(path: String, rows: Int, commits: Int, external: Bool, seconds: Double, keeps: Bool) throws -> Measured {
        let pool = try pool(path)
        var logger = Logger(label: "bench.memory")
        logger.logLevel = .warning
        var configuration = LiveListServer.Configuration()
        // Every version kept (the growth is what keeping them costs, not a limit's), or none.
        configuration.resumeBufferSize = keeps ? commits + 1_000 : 0
        configuration.resumeBufferBytes = 1 << 40
        let server = LiveListServer(database: pool, queries: [PublishedQuery(name: "items", sql: sql, version: "version")],
                                    // The whole index at once; another connection's commits noticed within milliseconds.
                                    options: LiveQueryOptions(dataVersionPollInterval: external ? .milliseconds(5) : nil, firstScreenRows: nil),
                                    configuration: configuration, logger: logger)
        let serverLogger = logger
        let served = try waitFor { try await WireServer.start(server, logger: serverLogger) }
        defer { served.stop() }
        let connection = try WireConnection(served.url)
        defer { connection.close() }
        connection.subscribe(window: 0..<60)
        guard case .reset = try connection.next() else { throw BenchFailure("wire.memory: the first message is not a reset") }
        let other: DatabaseQueue? = external ? try DatabaseQueue(path: path) : nil
        var random = SeededRandomNumberGenerator(seed: external ? 71 : 17)
        func commit() throws {
            let update = ItemUpdate.random(rows: rows, &random)
            if let other { try other.write { db in try update.run(db) } } else { try pool.write { db in try update.run(db) } }
            // One `changes` per commit (each changes a name, so the list): wait for it.
            while true {
                if case .changes = try connection.next() { return }
            }
        }
        // Warm: SQLite's page caches, the rows read for the window, the allocator's arenas (a
        // refetch reads the whole list each time, so a few are enough there).
        for _ in 0..<(external ? 20 : min(commits / 4 + 20, 500)) { try commit() }
        returnFreedMemory()
        let residentBefore = LiveQueryBenchmarks.residentBytes()
        let keptBefore = server.resumeGauge.current
        let clock = ContinuousClock()
        let start = clock.now
        var made = 0
        while made < commits, Stopwatch.milliseconds(start.duration(to: clock.now)) < seconds * 1_000 {
            try commit()
            made += 1
        }
        let elapsed = Stopwatch.milliseconds(start.duration(to: clock.now)) / 1_000
        returnFreedMemory()
        let resident = LiveQueryBenchmarks.residentBytes()
        let kept = server.resumeGauge.current
        return Measured(versions: kept.changesets - keptBefore.changesets, commits: made, residentGrowth: resident - residentBefore,
                        resident: resident, countedBytes: kept.bytes - keptBefore.bytes, seconds: elapsed)
    }

    /// Returns the allocator's free pages to the system (glibc's `malloc_trim`, where there is
    /// one), so that resident size counts what is held, not what was freed.
    private static func returnFreedMemory() {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        typealias Trim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
}
