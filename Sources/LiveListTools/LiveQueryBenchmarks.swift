import Foundation
import GRDB
import ListDiff
import ListTesting
import LiveQuery

/// `live.*`: a table of n rows (half of them in the result), sorted by a text column, with an
/// index on (flag, name) as an app would have. The baseline is what SQLite apps do today: refetch
/// (identity, version) in order after the commit and diff.
public enum LiveQueryBenchmarks {
    static let request = LiveQueryRequest<Int64>(
        table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")], version: "version")

    static func makeDatabase(rows: Int, seed: UInt64) throws -> (DatabaseQueue, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("bench.sqlite").path
        let queue = try DatabaseQueue(path: path)
        var random = SeededRandomNumberGenerator(seed: seed)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, flag INTEGER NOT NULL, version INTEGER NOT NULL DEFAULT 0)")
            let statement = try db.makeStatement(sql: "INSERT INTO item(name, flag) VALUES (?, ?)")
            for _ in 0..<rows {
                try statement.execute(arguments: [randomName(&random), Int.random(in: 0...1, using: &random)])
            }
            try db.execute(sql: "CREATE INDEX item_flag_name ON item(flag, name)")
        }
        return (queue, path)
    }

    static func randomName(_ random: inout SeededRandomNumberGenerator) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return String((0..<12).map { _ in letters[Int.random(in: 0..<letters.count, using: &random)] })
    }

    /// Runs the `live.*` and `paging.*` benchmarks `filter` (a name prefix) selects; `quick`
    /// keeps the 100k ones.
    public static func run(quick: Bool, filter: String?) async throws -> [BenchResult] {
        func selected(_ name: String) -> Bool { filter.map { name.hasPrefix($0) } ?? true }
        var results: [BenchResult] = []
        if selected("live.update.100k") {
            results.append(try await update(name: "live.update.100k", rows: 100_000, runs: quick ? 21 : 101, baselineRuns: quick ? 3 : 11))
        }
        if selected("paging.scroll.100k") {
            results.append(try await pagingScroll(runs: quick ? 1 : 3))
        }
        guard !quick else { return results }
        if selected("paging.first_screen.1m") {
            results.append(try await firstScreen())
        }
        if selected("live.update.1m") || selected("live.criteria.1m") {
            results += try await million(selected: selected)
        }
        return results
    }

    /// One-row updates that move the row: the latency from the commit to the changeset in hand.
    static func update(name: String, rows: Int, runs: Int, baselineRuns: Int) async throws -> BenchResult {
        let (queue, _) = try makeDatabase(rows: rows, seed: UInt64(rows))
        return try await measureUpdates(name: name, queue: queue, rows: rows, runs: runs, baselineRuns: baselineRuns, query: nil, inbox: nil)
    }

    static func measureUpdates(name: String, queue: DatabaseQueue, rows: Int, runs: Int, baselineRuns: Int,
                               query existing: LiveQuery<Int64>?, inbox existingInbox: UpdateInbox?) async throws -> BenchResult {
        let inbox = existingInbox ?? UpdateInbox()
        let query: LiveQuery<Int64>
        if let existing { query = existing } else {
            query = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil), callbackQueue: nil, onEvent: { inbox.append($0) })
        }
        var random = SeededRandomNumberGenerator(seed: 7)
        var latencies: [Double] = []
        var moves = 0
        for _ in 0..<runs {
            let update = ItemUpdate.random(rows: rows, &random)
            try await queue.write { db in try update.run(db) }
            for update in inbox.drain() {
                guard update.path == .incremental else { throw BenchFailure("\(name): expected the incremental path") }
                latencies.append(Stopwatch.milliseconds(update.latency))
                moves += update.changeset.changes.itemMoves.count + update.changeset.changes.itemInserts.count
            }
        }
        guard !latencies.isEmpty else { throw BenchFailure("\(name): no changeset delivered") }
        // Verify once: the live result equals a fresh query.
        let current = query.latestResult
        let fresh = try await queue.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = 1 ORDER BY name, id") }
        guard current.rows(in: 0..<current.count).map(\.id) == fresh else { throw BenchFailure("\(name): live result differs from a fresh query") }

        // Baseline: the same kind of write, then refetch (identity, version) in order and diff.
        var baseline: [Double] = []
        var previous = try await fetchIdentities(queue)
        for _ in 0..<baselineRuns {
            let update = ItemUpdate.random(rows: rows, &random)
            try await queue.write { db in try update.run(db) }
            _ = inbox.drain()
            let clock = ContinuousClock()
            let start = clock.now
            let next = try await fetchIdentities(queue)
            blackHole(Changeset(from: previous, to: next))
            baseline.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            previous = next
        }
        withExtendedLifetime(query) {}
        var result = BenchResult(name: name, medianMilliseconds: median(latencies), runs: latencies.count)
        if !baseline.isEmpty {
            result.baseline = "refetch (identity, version) + diff"
            result.baselineMedianMilliseconds = median(baseline)
        }
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(current.count)))
        result.add("p99_ms", .double(BenchResult.rounded(percentile(latencies, 0.99))))
        return result
    }

    static func fetchIdentities(_ queue: any DatabaseReader) async throws -> ListSnapshot<SingleSection, VersionedItem<Int64, Int64>> {
        try await queue.read { db in
            var items: [VersionedItem<Int64, Int64>] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT id, version FROM item WHERE flag = 1 ORDER BY name, id")
            while let row = try rows.next() { items.append(VersionedItem(id: row[0], version: row[1])) }
            return ListSnapshot(items: items)
        }
    }

    static func million(selected: (String) -> Bool) async throws -> [BenchResult] {
        let rows = 1_000_000
        let (queue, _) = try makeDatabase(rows: rows, seed: 1_000_000)
        var results: [BenchResult] = []
        let inbox = UpdateInbox()
        let clock = ContinuousClock()
        let query = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil), callbackQueue: nil, onEvent: { inbox.append($0) })
        if selected("live.update.1m") {
            results.append(try await measureUpdates(name: "live.update.1m", queue: queue, rows: rows, runs: 51, baselineRuns: 5, query: query, inbox: inbox))
        }
        if selected("live.criteria.1m") {
            var samples: [Double] = []
            var changes = 0
            for flag in [0, 1, 0, 1, 0] {
                let begin = clock.now
                try await query.setRequest(LiveQueryRequest<Int64>(table: "item", filter: .init("flag = ?", arguments: [flag.databaseValue]),
                                                            sort: [SortTerm("name")], version: "version"))
                samples.append(Stopwatch.milliseconds(begin.duration(to: clock.now)))
                changes = inbox.drain().last?.changeset.changes.count ?? 0
            }
            var criteria = BenchResult(name: "live.criteria.1m", medianMilliseconds: median(samples), runs: samples.count)
            criteria.add("rows", .integer(Int64(rows)))
            criteria.add("changes", .integer(Int64(changes)))
            results.append(criteria)
        }
        withExtendedLifetime(query) {}
        return results
    }

    /// Scrolls 100k rows from top to bottom in windows of 40 with 40 rows of prefetch, loading
    /// rows from SQLite (name, version) with one query per page of 50.
    static func pagingScroll(runs: Int) async throws -> BenchResult {
        let rows = 100_000
        let (queue, _) = try makeDatabase(rows: rows, seed: 100)
        let request = LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("name")], version: "version")
        let query = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil))
        var totals: [Double] = []
        var pageQueries = 0, peakCached = 0
        for _ in 0..<runs {
            let cache = RowCache<Int64, String>(pageSize: 50, maximumPages: 40, loader: RowCache.tableLoader(reader: queue, table: "item", columns: ["name"]) { row in
                row["name"]
            })
            cache.update(result: await query.completeResult())
            let clock = ContinuousClock()
            let start = clock.now
            peakCached = 0
            for window in stride(from: 0, to: rows, by: 40) {
                _ = cache.rows(in: window..<window + 40, prefetch: 40)
                await cache.waitForLoads()
                peakCached = max(peakCached, cache.cachedRowCount)
            }
            totals.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            let last = cache.rows(in: rows - 40..<rows)
            guard last.allSatisfy({ if case .loaded = $0 { true } else { false } }) else {
                throw BenchFailure("paging.scroll.100k: the last window is not loaded")
            }
            pageQueries = cache.statistics.pageQueries
        }
        var result = BenchResult(name: "paging.scroll.100k", medianMilliseconds: median(totals), runs: runs)
        result.add("page_queries", .integer(Int64(pageQueries)))
        result.add("minimum_page_queries", .integer(Int64(rows / 50)))
        result.add("peak_cached_rows", .integer(Int64(peakCached)))
        withExtendedLifetime(query) {}
        return result
    }

    /// From opening a live query over 1M rows to its first visible page loaded.
    static func firstScreen() async throws -> BenchResult {
        let (queue, _) = try makeDatabase(rows: 1_000_000, seed: 11)
        let clock = ContinuousClock()
        let start = clock.now
        let query = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil))
        let opened = clock.now
        let cache = RowCache<Int64, String>(pageSize: 50, maximumPages: 40, loader: RowCache.tableLoader(reader: queue, table: "item", columns: ["name"]) { row in
            row["name"]
        })
        cache.update(result: query.initialResult)   // the first screen
        _ = cache.rows(in: 0..<40)
        await cache.waitForLoads()
        let total = Stopwatch.milliseconds(start.duration(to: clock.now))
        var result = BenchResult(name: "paging.first_screen.1m", medianMilliseconds: total, runs: 1)
        result.add("open_ms", .double(BenchResult.rounded(Stopwatch.milliseconds(start.duration(to: opened)))))
        result.add("first_page_ms", .double(BenchResult.rounded(Stopwatch.milliseconds(opened.duration(to: clock.now)))))
        result.add("page_queries", .integer(Int64(cache.statistics.pageQueries)))
        withExtendedLifetime(query) {}
        return result
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// Resident set size now, from /proc (0 where unavailable).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Peak resident set size of the process (VmHWM), from /proc.
    static func peakResidentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes * 1024
    }
}
