import Foundation
import GRDB
import ListDiff
import ListTesting
import LiveQuery
#if canImport(Glibc)
import Glibc
#endif

/// `live.external.1m`: another process commits a one-row UPDATE that moves a row of a 1M-row
/// table (half in the result); measured from its commit to the changeset in the app's process,
/// with the change log and the file watcher. The baseline is what LiveQuery did before: poll
/// `PRAGMA data_version` (every 500 ms), refetch and diff — in the same run. `trigger_overhead_us`
/// is what the log's triggers add to each row written.
public enum ExternalBenchmarks {
    /// Nanoseconds of the system-wide monotonic clock: comparable between processes.
    public static func monotonicNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Collects delivered updates with the monotonic time of their delivery.
    final class Deliveries: Sendable {
        /// Appended on the writer's queue, drained by the benchmark.
        private let updates = Locked<[(nanoseconds: Int64, path: LiveUpdatePath)]>([])
        func append(_ event: LiveQueryEvent<Int64>) {
            guard case let .update(update) = event else { return }
            let now = ExternalBenchmarks.monotonicNanoseconds()
            updates.withLock { $0.append((now, update.path)) }
        }
        func drain() -> [(nanoseconds: Int64, path: LiveUpdatePath)] { updates.withLock { updates in defer { updates = [] }; return updates } }
    }

    /// Runs `live.external.1m` unless `quick`, or `filter` (a name prefix) leaves it out.
    public static func run(quick: Bool, filter: String?) async throws -> [BenchResult] {
        guard !quick, filter.map({ "live.external.1m".hasPrefix($0) }) ?? true else { return [] }
        return [try await external()]
    }

    /// The other process: reads `id name` lines, commits each as one UPDATE, and answers
    /// `committed <monotonic ns>` with the time the COMMIT statement started — the earliest the
    /// commit can be seen (the time after it returns can come after the changeset is delivered
    /// in the other process, on two cores).
    public static func writerLoop(database path: String) throws {
        let queue = try DatabaseQueue(path: path, configuration: {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            return configuration
        }())
        while let line = readLine() {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = Int64(parts[0]) else { break }
            let committing = try queue.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                try ItemUpdate(id: id, name: String(parts[1])).run(db)
                let time = monotonicNanoseconds()
                try db.execute(sql: "COMMIT")
                return time
            }
            FileHandle.standardOutput.write(Data("committed \(committing)\n".utf8))
        }
    }

    /// The writer process and its pipes.
    struct Writer {
        let process: Process
        let input: FileHandle
        let output: FileHandle
        var buffer = Data()

        init(database: String) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["bench", "--child", "external-writer", "--child-database", database]
            let inputPipe = Pipe(), outputPipe = Pipe()
            process.standardInput = inputPipe
            process.standardOutput = outputPipe
            try process.run()
            input = inputPipe.fileHandleForWriting
            output = outputPipe.fileHandleForReading
        }

        /// Sends one update; returns when it is committed, with the commit's monotonic time.
        mutating func commit(_ update: ItemUpdate) throws -> Int64 {
            input.write(Data("\(update.id) \(update.name)\n".utf8))
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    guard line.hasPrefix("committed "), let time = Int64(line.dropFirst("committed ".count)) else {
                        throw BenchFailure("live.external.1m: the writer said \(line)")
                    }
                    return time
                }
                let chunk = output.availableData
                guard !chunk.isEmpty else { throw BenchFailure("live.external.1m: the writer process ended") }
                buffer += chunk
            }
        }

        func stop() throws {
            try input.close()
            process.waitUntilExit()
        }
    }

    static func external() async throws -> BenchResult {
        let name = "live.external.1m"
        let rows = 1_000_000
        let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: 0xE71)
        try await setup.write { db in try ChangeTracking.install(on: db, tables: ["item"]) }
        try setup.close()
        let pool = try DatabasePool(path: path)
        var random = SeededRandomNumberGenerator(seed: 0xE72)
        var writer = try Writer(database: path)

        /// Commits in the other process, then waits for the changeset here: the latency of each.
        func measure(_ query: LiveQuery<Int64>, _ deliveries: Deliveries, runs: Int, expecting path: (LiveUpdatePath) -> Bool) throws -> [Double] {
            var latencies: [Double] = []
            for _ in 0..<runs {
                let update = ItemUpdate.random(rows: rows, &random)
                guard deliveries.drain().isEmpty else { throw BenchFailure("\(name): a changeset arrived without a commit") }
                let committed = try writer.commit(update)
                let deadline = monotonicNanoseconds() + 10_000_000_000
                var delivered: [(nanoseconds: Int64, path: LiveUpdatePath)] = []
                while delivered.isEmpty && monotonicNanoseconds() < deadline {
                    delivered = deliveries.drain()
                    if delivered.isEmpty { usleep(50) }
                }
                guard let first = delivered.first else { throw BenchFailure("\(name): no changeset within 10 s of the commit") }
                guard path(first.path) else { throw BenchFailure("\(name): unexpected path \(first.path)") }
                latencies.append(Double(first.nanoseconds - committed) / 1_000_000)
            }
            return latencies
        }

        // With the change log and the file watcher (the poll stays, as an app keeps it).
        let deliveries = Deliveries()
        let query = try await LiveQuery.open(LiveQueryBenchmarks.request, in: pool, options: .init(firstScreenRows: nil), callbackQueue: nil,
                                             onEvent: { deliveries.append($0) })
        guard query.notes.isEmpty else { throw BenchFailure("\(name): \(query.notes)") }
        _ = try measure(query, deliveries, runs: 5) { $0 == .incremental }   // warm up
        let latencies = try measure(query, deliveries, runs: 101) { $0 == .incremental }
        let current = query.latestResult
        let fresh = try await pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = 1 ORDER BY name, id") }
        guard current.rows(in: 0..<current.count).map(\.id) == fresh else { throw BenchFailure("\(name): live result differs from a fresh query") }
        query.cancel()

        // Baseline: no log, no watcher — the data_version poll, a refetch and a diff.
        let baselineDeliveries = Deliveries()
        let baselineQuery = try await LiveQuery.open(
            LiveQueryBenchmarks.request, in: pool, options: .init(firstScreenRows: nil, followsChangeLog: false, watchesFiles: false),
            callbackQueue: nil, onEvent: { baselineDeliveries.append($0) })
        let baseline = try measure(baselineQuery, baselineDeliveries, runs: 7) { if case .refetch = $0 { true } else { false } }
        baselineQuery.cancel()
        try writer.stop()

        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(latencies), runs: latencies.count)
        result.baseline = "data_version poll (500 ms) + refetch + diff"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(baseline)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(latencies, 0.99))))
        result.add("min_ms", .double(BenchResult.rounded(latencies.min() ?? 0)))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(current.count)))
        result.add("trigger_overhead_us", .double(BenchResult.rounded(try triggerOverheadMicroseconds())))
        return result
    }

    /// What the change log's triggers add to one row written: 20,000 single-row UPDATEs (one
    /// transaction) on a 100k-row table with and without them, median of 5 runs each.
    static func triggerOverheadMicroseconds() throws -> Double {
        let updates = 20_000
        func perRow(tracked: Bool) throws -> Double {
            let (queue, _) = try LiveQueryBenchmarks.makeDatabase(rows: 100_000, seed: 0xE73)
            if tracked { try queue.write { db in try ChangeTracking.install(on: db, tables: ["item"]) } }
            var random = SeededRandomNumberGenerator(seed: 0xE74)
            var samples: [Double] = []
            for _ in 0..<5 {
                let ids = (0..<updates).map { _ in Int64.random(in: 1...100_000, using: &random) }
                let clock = ContinuousClock()
                let start = clock.now
                try queue.write { db in
                    let statement = try db.makeStatement(sql: "UPDATE item SET name = ?, version = version + 1 WHERE id = ?")
                    for id in ids { try statement.execute(arguments: ["n\(id)", id]) }
                }
                samples.append(Stopwatch.milliseconds(start.duration(to: clock.now)) * 1000 / Double(updates))
            }
            return LiveQueryBenchmarks.median(samples)
        }
        return try perRow(tracked: true) - perRow(tracked: false)
    }
}
