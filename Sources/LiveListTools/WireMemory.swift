import Foundation
import GRDB
import ListTesting
import LiveListServer
import LiveListWire
import LiveQuery
import Logging

/// `wire.memory.*`: what a served query's kept versions (the changesets kept for resuming
/// clients, with the results they lead from) cost in resident memory. One subscriber, one-row
/// commits on two paths: from the server's own connection (followed row by row) and from another
/// connection without the change log (each refetched by the server). Each commit is waited for,
/// so each is one kept version. Resident growth is read from /proc after returning freed memory
/// to the system, and divided by the versions the server kept; the server's own count of their
/// bytes is reported beside it.
enum WireMemory {
    static let sql = "SELECT id, name, flag, version FROM item ORDER BY name"

    struct Measured {
        var versions: Int
        var commits: Int
        var residentGrowth: Int
        var resident: Int
        var countedBytes: Int
        var seconds: Double
        /// The server's count of each commit's kept bytes, sorted.
        var countedEach: [Int]

        var bytesPerVersion: Double { Double(residentGrowth) / Double(max(versions, 1)) }
    }

    /// The benchmark over `path`'s `item` table (`rows` rows): `commits` one-row commits on the
    /// incremental path; on the refetch path as many as `refetchSeconds` allow, up to `commits`
    /// (each is a refetch of the whole list).
    @MainActor
    static func run(path: String, rows: Int, commits: Int, refetchSeconds: Double, name: String) throws -> BenchResult {
        try waitFor { try await pool(path).write { db in try db.execute(sql: "CREATE INDEX IF NOT EXISTS item_name ON item(name)") } }
        let incremental = try measure(path: path, rows: rows, commits: commits, external: false, seconds: .infinity)
        let refetch = try measure(path: path, rows: rows, commits: commits, external: true, seconds: refetchSeconds)
        let worse = max(incremental.bytesPerVersion, refetch.bytesPerVersion)
        var result = BenchResult(name: name, medianMilliseconds: .nan, runs: 1)
        result.add("rows", .integer(Int64(rows)))
        result.add("bytes_per_kept_version", .integer(Int64(worse.rounded())))
        result.add("incremental_bytes_per_kept_version", .integer(Int64(incremental.bytesPerVersion.rounded())))
        result.add("refetch_bytes_per_kept_version", .integer(Int64(refetch.bytesPerVersion.rounded())))
        result.add("incremental_counted_bytes_per_kept_version", .integer(Int64(incremental.countedBytes / max(incremental.versions, 1))))
        result.add("refetch_counted_bytes_per_kept_version", .integer(Int64(refetch.countedBytes / max(refetch.versions, 1))))
        for (path, measured) in [("incremental", incremental), ("refetch", refetch)] where !measured.countedEach.isEmpty {
            result.add("\(path)_counted_bytes_median", .integer(Int64(measured.countedEach[measured.countedEach.count / 2])))
            result.add("\(path)_counted_bytes_max", .integer(Int64(measured.countedEach[measured.countedEach.count - 1])))
        }
        result.add("kept_versions", .integer(Int64(incremental.versions + refetch.versions)))
        result.add("incremental_commits", .integer(Int64(incremental.commits)))
        result.add("refetch_commits", .integer(Int64(refetch.commits)))
        result.add("refetch_ms_per_commit", .double(BenchResult.rounded(refetch.seconds * 1_000 / Double(max(refetch.commits, 1)))))
        result.add("resident_bytes", .integer(Int64(max(incremental.resident, refetch.resident))))
        result.add("budget_bytes_per_kept_version", .integer(16_384))
        return result
    }

    private static func pool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabasePool(path: path, configuration: configuration)
    }

    @MainActor
    private static func measure(path: String, rows: Int, commits: Int, external: Bool, seconds: Double) throws -> Measured {
        let pool = try pool(path)
        var logger = Logger(label: "bench.memory")
        logger.logLevel = .warning
        var configuration = LiveListServer.Configuration()
        // The whole index at once; another connection's commits noticed within milliseconds.
        configuration.liveQueryOptions = LiveQueryOptions(dataVersionPollInterval: external ? .milliseconds(5) : nil, firstScreenRows: nil)
        // Every version kept: the growth measured is what keeping them costs, not a limit's.
        configuration.resumeBufferSize = commits + 1_000
        configuration.resumeBufferBytes = 1 << 40
        let server = LiveListServer(database: pool, queries: [PublishedQuery(name: "items", sql: sql, version: "version")],
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
        for _ in 0..<20 { try commit() }   // warm: caches, the socket, the first reads
        returnFreedMemory()
        let residentBefore = LiveQueryBenchmarks.residentBytes()
        let keptBefore = server.resumeGauge.current
        let clock = ContinuousClock()
        let start = clock.now
        var made = 0
        var countedEach: [Int] = []
        var last = keptBefore.bytes
        while made < commits, Stopwatch.milliseconds(start.duration(to: clock.now)) < seconds * 1_000 {
            try commit()
            made += 1
            let now = server.resumeGauge.current.bytes
            countedEach.append(now - last)
            last = now
        }
        countedEach.sort()
        let elapsed = Stopwatch.milliseconds(start.duration(to: clock.now)) / 1_000
        returnFreedMemory()
        let resident = LiveQueryBenchmarks.residentBytes()
        let kept = server.resumeGauge.current
        return Measured(versions: kept.changesets - keptBefore.changesets, commits: made, residentGrowth: resident - residentBefore,
                        resident: resident, countedBytes: kept.bytes - keptBefore.bytes, seconds: elapsed, countedEach: countedEach)
    }

    /// Returns the allocator's free pages to the system (glibc's `malloc_trim`, where there is
    /// one), so that resident size counts what is held, not what was freed.
    private static func returnFreedMemory() {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        typealias Trim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
}
