import Foundation
import GRDB
import GRDBSQLite
import ListDiff
import ListPresenter
import ListTesting
import LiveQueryPresenting
import LiveQuery

/// A list view that only counts what it is told: the presenter's own work, measured without any
/// view's. Batches complete at once; the viewport is a fixed window of rows.
@MainActor
final class CountingTarget: ListTarget {
    var batches = 0
    var operations = 0
    var reloads = 0
    var offset = 0.0
    let viewportRows: Int
    /// The number of rows in the presenter's displayed list, for geometry.
    var displayed: () -> Int = { 0 }
    var scrollAnimationDidEnd: (@MainActor () -> Void)?

    init(viewportRows: Int) { self.viewportRows = viewportRows }

    func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        batches += 1
        updates()
        completion()
    }
    func recordChanges(_ changes: ListChanges) { operations += changes.count }
    func recordReconfigures(_ paths: [ItemPath]) { operations += paths.count }
    var supportsReconfigure: Bool { true }
    func reloadAll() { reloads += 1 }
    func layoutNow() {}
    var isOnScreen: Bool { true }

    /// The rows of the first section in the viewport (the benchmarks' lists have one section).
    var visibleItemPaths: [ItemPath] {
        let first = Int(offset)
        let count = max(0, min(viewportRows, displayed() - first))
        return (0..<count).map { ItemPath(section: 0, item: first + $0) }
    }
    func contentTop(of path: ItemPath) -> Double? { Double(path.item) }
    var scrollOffset: Double { offset }
    var maximumScrollOffset: Double { Double(max(0, displayed() - viewportRows)) }
    func scroll(to offset: Double, animated: Bool) { self.offset = offset }
    var selectedItemPaths: [ItemPath] { [] }
    func setSelected(_ isSelected: Bool, at path: ItemPath) {}
}

/// `e2e.*`: from a write to the presenter having applied it, and from `open` to the first screen
/// on display — the paths a user waits on — with what a GRDB user writes today as the baseline.
public enum EndToEndBenchmarks {
    typealias Presenter = ListPresenter<LiveSection, LiveRow<Int64>>
    typealias CellView = HeadlessListView<CellContent<LiveSection, LiveRow<Int64>, BenchItem>, SectionHeaderContent<LiveSection>>

    @MainActor
    static func attach<Section, Item>(_ presenter: ListPresenter<Section, Item>) -> CountingTarget {
        let target = CountingTarget(viewportRows: 40)
        target.displayed = { [unowned presenter] in
            presenter.displayed.sectionCount > 0 ? presenter.displayed.itemCount(inSection: 0) : 0
        }
        presenter.target = target
        return target
    }

    /// Runs on the main thread, as an app's presenter does; database work is waited for.
    @MainActor
    public static func run(quick: Bool, filter: String?) throws -> [BenchResult] {
        func selected(_ name: String) -> Bool { filter.map { name.hasPrefix($0) } ?? true }
        var results: [BenchResult] = []
        if selected("e2e.update.100k") {
            results.append(try update(name: "e2e.update.100k", rows: 100_000, runs: quick ? 21 : 201, baselineRuns: quick ? 3 : 11))
        }
        guard !quick else { return results }
        if selected("e2e.update.1m") {
            results.append(try update(name: "e2e.update.1m", rows: 1_000_000, runs: 201, baselineRuns: 5))
        }
        if selected("e2e.first_screen.1m") || selected("live.open.1m") {
            results += try ChildMeasurements.run(selected: selected)
        }
        return results
    }

    /// One-row UPDATEs that move a row: commit → live query → presenter → target.
    @MainActor
    static func update(name: String, rows: Int, runs: Int, baselineRuns: Int) throws -> BenchResult {
        let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: UInt64(rows) &+ 3)
        try setup.close()
        // An app's database: a pool (WAL), as GRDB recommends for apps.
        let queue = try DatabasePool(path: path)
        let inbox = UpdateInbox()
        let query = try waitFor {
            try await LiveQuery.open(LiveQueryBenchmarks.request, in: queue,
                                     options: .init(dataVersionPollInterval: nil, firstScreenRows: nil),
                                     callbackQueue: nil, onEvent: { inbox.append($0) })
        }
        // The row cache an app's list has, made before the timed writes: from then on the query
        // also reads the changed rows' columns at each commit, so the timings include that.
        let cache = RowCache<Int64, BenchItem>(query: query, reader: queue, pageSize: 50)
        let presenter = Presenter()
        let target = attach(presenter)
        presenter.replace(with: query.initialResult)
        target.offset = Double(query.initialResult.count / 2)
        var random = SeededRandomNumberGenerator(seed: 17)
        let clock = ContinuousClock()
        var totals: [Double] = [], mains: [Double] = []
        for _ in 0..<runs {
            let update = ItemUpdate.random(rows: rows, &random)
            let start = clock.now
            try queue.write { db in try update.run(db) }
            let mainStart = clock.now
            for update in inbox.drain() { presenter.apply(update.changeset) }
            let end = clock.now
            totals.append(Stopwatch.milliseconds(start.duration(to: end)))
            mains.append(Stopwatch.milliseconds(mainStart.duration(to: end)))
        }
        // Verify once: what the presenter shows is a fresh query's answer, reached without a diff.
        let shown = presenter.displayed.model.snapshot.sections.flatMap { $0.items.map(\.id) }
        let fresh = try queue.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = 1 ORDER BY name, id") }
        guard shown == fresh, presenter.statistics.fullDiffs == 0 else { throw BenchFailure("\(name): the presenter does not show a fresh query's answer") }

        let visible = try visibleUpdates(query, queue, inbox, cache, updates: 20, &random)

        // Baseline: what a GRDB user writes today — refetch (identity, version) in order after the
        // commit, and hand the snapshot to the presenter, which diffs it on the main actor.
        let baselinePresenter = ListPresenter<SingleSection, VersionedItem<Int64, Int64>>()
        _ = attach(baselinePresenter)
        baselinePresenter.update(try waitFor { try await LiveQueryBenchmarks.fetchIdentities(queue) })
        var baseline: [Double] = []
        for _ in 0..<baselineRuns {
            let update = ItemUpdate.random(rows: rows, &random)
            let start = clock.now
            try queue.write { db in try update.run(db) }
            let snapshot = try waitFor { try await LiveQueryBenchmarks.fetchIdentities(queue) }
            baselinePresenter.update(snapshot)
            baseline.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
        }
        _ = inbox.drain()
        withExtendedLifetime((query, target)) {}
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(totals), runs: totals.count)
        result.baseline = "refetch (identity, version) + diff + presenter.update"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(baseline)
        result.add("main_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(mains))))
        result.add("main_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(mains, 0.99))))
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(totals, 0.99))))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(query.latestResult.count)))
        result.add("placeholder_cells", .integer(Int64(visible.placeholders)))
        result.add("cell_reads_per_update", .double(BenchResult.rounded(visible.readsPerUpdate)))
        return result
    }

    /// One-row UPDATEs of rows on screen, through a row cache and a cell source into a strict
    /// headless view: how many placeholder cells they show (an updated row that blinks shows
    /// one, then its record once its page is read again) and how many times a cell is read per
    /// update, counted until every load they started has landed.
    @MainActor
    static func visibleUpdates(_ query: LiveQuery<Int64>, _ queue: DatabasePool, _ inbox: UpdateInbox, _ cache: RowCache<Int64, BenchItem>,
                               updates: Int, _ random: inout SeededRandomNumberGenerator) throws -> (placeholders: Int, readsPerUpdate: Double) {
        _ = inbox.drain()
        let presenter = Presenter()
        let cells = ListCellSource(presenter: presenter, records: cache, prefetch: 0)
        let (view, dataSource) = cells.attachHeadlessView(viewportRows: 40)
        let result = query.latestResult
        cache.update(result: result)
        cells.receive(.initial(AnySectionedList(result), isComplete: result.isComplete))
        view.setContentOffset(result.count / 2)
        try settle(view, cache)
        guard placeholdersShown(view) == 0 else { throw BenchFailure("visible updates: the first screen did not load") }
        let (reads, placeholders) = (view.cellReads, dataSource.placeholdersAnswered)
        for _ in 0..<updates {
            let position = view.contentOffset + Int.random(in: 0..<view.viewportRows, using: &random)
            guard let row = query.latestResult.row(at: position) else { throw BenchFailure("visible updates: no row at \(position)") }
            // A longer name sorts right after the old one: the row stays on screen, reloaded.
            try queue.write { db in
                try db.execute(sql: "UPDATE item SET name = name || 'v', version = version + 1 WHERE id = ?", arguments: [row.id])
            }
            for update in inbox.drain() {
                cache.update(with: update)
                cells.receive(.changes(update.changeset, isComplete: update.result.isComplete))
            }
            try settle(view, cache)
        }
        guard view.violations.isEmpty else { throw BenchFailure("visible updates: \(view.violations)") }
        withExtendedLifetime(dataSource) {}
        return (dataSource.placeholdersAnswered - placeholders, Double(view.cellReads - reads) / Double(updates))
    }

    /// Waits for the cache's loads and lets the main actor hear of them (cells that showed
    /// placeholders are read again then), until nothing is loading and the cells show records.
    @MainActor
    static func settle(_ view: CellView, _ cache: RowCache<Int64, BenchItem>) throws {
        let deadline = Date(timeIntervalSinceNow: 10)
        repeat {
            try waitFor { await cache.waitForLoads() }
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.005))
        } while (cache.loadsInFlight > 0 || placeholdersShown(view) > 0) && Date() < deadline
    }

    @MainActor
    static func placeholdersShown(_ view: CellView) -> Int {
        view.visibleItems.count { path in
            guard case .placeholder? = view.cellContent(at: path) else { return false }
            return true
        }
    }
}

/// A row of the benchmarks' `item` table as a list shows it.
struct BenchItem: FetchableRecord, Sendable {
    var id: Int64
    var name: String

    init(row: Row) throws {
        id = try row.decode(Int64.self, forColumn: "id")
        name = try row.decode(String.self, forColumn: "name")
    }
}

/// Measurements that must start from a fresh process: the time to the first screen and to the
/// full index, and the memory the index adds. The parent builds the database once, runs the
/// `livelist bench --child …` helper three times, and reports the median and the spread. The full
/// index has a floor measured in the same run, each time in a fresh process right after it: the
/// same ordered SELECT read into an array, so its budget is a ratio to what any reader pays.
public enum ChildMeasurements {
    /// How many fresh processes each measurement runs in (the median and spread are over them).
    public static let processes = 3

    static func run(selected: (String) -> Bool) throws -> [BenchResult] {
        let (_, path) = try LiveQueryBenchmarks.makeDatabase(rows: 1_000_000, seed: 1_000_000)
        var results: [BenchResult] = []
        // (benchmark, child, the child that measures its floor)
        let measurements: [(String, String, String?)] = [
            ("e2e.first_screen.1m", "first-screen", nil), ("live.open.1m", "open", "open-floor"),
        ]
        for (bench, child, floorChild) in measurements where selected(bench) {
            var samples: [[String: Double]] = [], floors: [Double] = []
            for _ in 0..<processes {
                // Interleaved, so that the machine's noise falls on both alike.
                samples.append(try spawn(child, database: path))
                if let floorChild, let floor = try spawn(floorChild, database: path)["ms"] { floors.append(floor) }
            }
            let times = samples.compactMap { $0["ms"] }
            guard times.count == processes, floorChild == nil || floors.count == processes else {
                throw BenchFailure("\(bench): a child process failed")
            }
            var result = BenchResult(name: bench, medianMilliseconds: LiveQueryBenchmarks.median(times), runs: processes)
            if !floors.isEmpty {
                result.baseline = "floor: the same ordered SELECT read into an array"
                result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(floors)
                // The budget's figure: each process's time over the floor measured beside it.
                let ratios = zip(times, floors).map { $0 / $1 }
                result.add("floor_ratio", .double(BenchResult.rounded(LiveQueryBenchmarks.median(ratios))))
            }
            result.add("processes", .integer(Int64(processes)))
            result.add("min_ms", .double(BenchResult.rounded(times.min() ?? 0)))
            result.add("max_ms", .double(BenchResult.rounded(times.max() ?? 0)))
            for key in ["in_result", "bytes_per_row", "resident_bytes_per_row", "resident_bytes_added", "sqlite_bytes_added", "rows_shown",
                        "peak_resident_bytes"] {
                let values = samples.compactMap { $0[key] }
                guard !values.isEmpty else { continue }
                result.add(key, .integer(Int64(LiveQueryBenchmarks.median(values))))
                if key == "bytes_per_row" { result.add("bytes_per_row_max", .integer(Int64(values.max() ?? 0))) }
            }
            if bench == "live.open.1m" {
                result.add("memory_note", .string("bytes_per_row: index only — resident growth less SQLite's own (its page cache, "
                    + "sqlite_bytes_added); resident_bytes_per_row: the whole growth; the file watcher's threads add ≈ 0.6 MB per process"))
            }
            results.append(result)
        }
        return results
    }

    /// Runs this executable as `bench --child <which> --child-database <path>`; its last output
    /// line is a JSON object of figures.
    static func spawn(_ which: String, database: String) throws -> [String: Double] {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let process = Process()
        process.executableURL = executable
        process.arguments = ["bench", "--child", which, "--child-database", database]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw BenchFailure("bench child \(which) failed")
        }
        return object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
    }

    /// In the child: one measurement, printed as JSON.
    @MainActor
    public static func measure(_ which: String, database path: String) throws -> String {
        let queue = try DatabaseQueue(path: path)
        let residentBefore = LiveQueryBenchmarks.residentBytes()
        let sqliteBefore = sqlite3_memory_used()
        let clock = ContinuousClock()
        switch which {
        case "first-screen":
            // From calling open to the presenter displaying the first screen.
            let start = clock.now
            let query = try waitFor { try await LiveQuery.open(LiveQueryBenchmarks.request, in: queue, options: .init(dataVersionPollInterval: nil)) }
            let presenter = EndToEndBenchmarks.Presenter()
            let target = EndToEndBenchmarks.attach(presenter)
            presenter.replace(with: query.initialResult)
            let shown = target.visibleItemPaths.count
            let milliseconds = Stopwatch.milliseconds(start.duration(to: clock.now))
            guard shown == target.viewportRows else { throw BenchFailure("the first screen shows \(shown) rows") }
            withExtendedLifetime(query) {}
            return #"{"ms": \#(milliseconds), "rows_shown": \#(shown)}"#
        case "open-floor":
            return try measureOpenFloor(queue)
        default:
            // From calling open to the whole index built, and the memory it added.
            let start = clock.now
            let query = try waitFor {
                // The index's memory alone: the file watcher's dispatch threads add about 0.6 MB
                // once per process, whatever the rows (reported apart as `memory_note`).
                try await LiveQuery.open(LiveQueryBenchmarks.request, in: queue,
                                         options: .init(dataVersionPollInterval: nil, firstScreenRows: nil, watchesFiles: false))
            }
            let milliseconds = Stopwatch.milliseconds(start.duration(to: clock.now))
            let added = LiveQueryBenchmarks.residentBytes() - residentBefore
            // SQLite's own memory (the connection's page cache, filled by reading the table) is
            // not the index's: any reader of the table holds it. Counted by SQLite, it is taken
            // out of the index's figure and reported apart.
            let sqliteAdded = Int(sqlite3_memory_used() - sqliteBefore)
            let count = query.initialResult.count
            let peak = LiveQueryBenchmarks.peakResidentBytes()
            withExtendedLifetime(query) {}
            return #"{"ms": \#(milliseconds), "in_result": \#(count), "resident_bytes_added": \#(added), "sqlite_bytes_added": \#(sqliteAdded), "#
                + #""bytes_per_row": \#((added - sqliteAdded) / max(1, count)), "resident_bytes_per_row": \#(added / max(1, count)), "#
                + #""peak_resident_bytes": \#(peak)}"#
        }
    }

    /// The floor under `live.open.1m`, in the child: the SELECT the live query issues to index
    /// the whole result — its identity, sort and version columns in its order — stepped through,
    /// every row's values read into an array. What any reader of that result pays, and the open
    /// can only add to.
    ///
    /// The SQL is written here by hand: `open` reads this table with its index set aside (`NOT
    /// INDEXED`: the index on (flag, name) does not cover `version`, and half the table is in the
    /// result, so a scan and a sort beat a lookup per row), a choice not visible through the
    /// public API. It is checked against the statement ``LiveQuery/explain(_:in:)`` reports,
    /// which is the same but for `NOT INDEXED`.
    static func measureOpenFloor(_ queue: DatabaseQueue) throws -> String {
        let sql = #"SELECT "item".rowid, "item"."name", "item"."version" FROM "item" NOT INDEXED WHERE ((flag = ?)) ORDER BY "item"."name" COLLATE BINARY ASC, "item".rowid"#
        let arguments: StatementArguments = [1]   // LiveQueryBenchmarks.request's filter
        struct FloorRow {
            var id: Int64
            var name: SQLText
            var version: Int64
        }
        let clock = ContinuousClock()
        let start = clock.now
        let rows: [FloorRow] = try queue.read { db in
            // Stepped and read as the live query does: a GRDB cursor, the values from the statement.
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            let cursor = try GRDB.Row.fetchCursor(statement)
            let handle = statement.sqliteStatement
            var rows: [FloorRow] = []
            while try cursor.next() != nil {
                let name = sqlite3_column_text(handle, 1).map {
                    SQLText(bytes: UnsafeBufferPointer(start: $0, count: Int(sqlite3_column_bytes(handle, 1))))
                }
                rows.append(FloorRow(id: sqlite3_column_int64(handle, 0), name: name ?? SQLText(""),
                                     version: sqlite3_column_int64(handle, 2)))
            }
            return rows
        }
        let milliseconds = Stopwatch.milliseconds(start.duration(to: clock.now))
        // Checked after the timed read, so that the read starts from a fresh connection, as open does.
        let planned = try waitFor { try await LiveQuery.explain(LiveQueryBenchmarks.request, in: queue) }.sql
        guard planned == sql.replacingOccurrences(of: " NOT INDEXED", with: "") else {
            throw BenchFailure("the floor's SELECT is not the live query's: \(sql) vs \(planned)")
        }
        return #"{"ms": \#(milliseconds), "in_result": \#(rows.count)}"#
    }
}
