import Foundation
import ListDiff
import ListTesting
import LiveQuery
import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres

/// `pg.*`: live queries over PostgreSQL, on a server given with `livelist bench --postgres URL` or
/// on a throwaway cluster (initdb) when PostgreSQL's binaries are here. A table of 1M rows, half
/// of them in the result, sorted by a text column under "C", with an index on (flag, name) as an
/// app would have. Baselines, in the same run: what apps do today — refetch (identity, version)
/// and diff after the commit, and the same woken by LISTEN/NOTIFY.
public enum PostgresBenchmarks {
    static let logger: Logger = {
        var logger = Logger(label: "bench.postgres")
        logger.logLevel = .warning
        return logger
    }()

    static let rows = 1_000_000
    static let sql = "SELECT id, name, version FROM item WHERE flag = 1 ORDER BY name"
    static let identitiesSQL = "SELECT id, version FROM item WHERE flag = 1 ORDER BY name, id"

    /// The database the benchmarks use, and its URL (for child processes): `url`'s, or a fresh
    /// database of a throwaway cluster.
    static func database(url: String?) async throws -> (PostgresConnection.Configuration, String) {
        if let url { return (try configuration(url: url), url) }
        guard let cluster = try await PostgresCluster.running() else {
            throw BenchFailure("no PostgreSQL: give --postgres URL, or install PostgreSQL's server (initdb)")
        }
        let (configuration, connection) = try await PostgresCluster.database(cluster)
        try await connection.close()
        return (configuration, PostgresCluster.url(cluster, database: configuration.database ?? ""))
    }

    static func configuration(url: String) throws -> PostgresConnection.Configuration {
        do {
            return try PostgresLiveDatabase.configuration(url: url)
        } catch {
            throw BenchFailure("--postgres: \(error)")
        }
    }

    static func connect(_ configuration: PostgresConnection.Configuration, id: Int = 1) async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
    }

    static func execute(_ connection: PostgresConnection, _ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    /// The 1M-row table (made again when a previous run left another).
    static func makeTable(_ connection: PostgresConnection) async throws {
        try await execute(connection, "DROP TABLE IF EXISTS item")
        try await execute(connection, """
            CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL, flag integer NOT NULL, version integer NOT NULL DEFAULT 0)
            """)
        try await execute(connection, "INSERT INTO item SELECT g, substr(md5(g::text), 1, 12), g % 2, 0 FROM generate_series(1, \(rows)) g")
        try await execute(connection, "CREATE INDEX item_flag_name ON item (flag, name)")
        try await execute(connection, "VACUUM ANALYZE item")
    }

    /// Runs the `pg.*` benchmarks `filter` selects (none with `quick`, but a shorter `pg.mixed`
    /// when the filter names it).
    public static func run(quick: Bool, filter: String?, url: String?) async throws -> [BenchResult] {
        func selected(_ name: String) -> Bool { filter.map { name.hasPrefix($0) } ?? true }
        let names = ["pg.update.1m", "pg.open.1m", "pg.fanout"]
        let mixed = selected(PostgresMixed.name) && (!quick || filter != nil)
        let stall = !quick && selected(PostgresStall.name)
        // Restarts PostgreSQL: only the throwaway cluster, never a server given by URL.
        let restart = !quick && selected(PostgresRestart.name) && url == nil
        guard (!quick && names.contains(where: selected)) || mixed || stall || restart else { return [] }
        let (configuration, databaseURL) = try await database(url: url)
        let writer = try await connect(configuration)
        do {
            var results: [BenchResult] = []
            if !quick, names.contains(where: selected) {
                try await makeTable(writer)
                if selected("pg.open.1m") { results.append(try open(url: databaseURL)) }
                if selected("pg.update.1m") { results.append(try await update(configuration, writer: writer)) }
                if selected("pg.fanout") { results.append(try await PostgresFanout.run(configuration, writer: writer)) }
            }
            if mixed { results.append(try await PostgresMixed.run(configuration, url: databaseURL, quick: quick)) }
            if stall { results.append(try await PostgresStall.run(configuration, writer: writer)) }
            if restart { results.append(try await PostgresRestart.run(configuration)) }
            try await writer.close()
            return results
        } catch {
            try? await writer.close()
            throw error
        }
    }

    static var request: PostgresLiveQueryRequest<Int64> { PostgresLiveQueryRequest(sql: sql, as: Int64.self, version: "version") }

    // MARK: - pg.open.1m

    /// Opening the query, in fresh processes with glibc's default allocator (interleaved with its
    /// floor, the same ordered SELECT read into an array): the first screen, the whole index, and
    /// the memory the index holds per row.
    static func open(url: String) throws -> BenchResult {
        var samples: [[String: Double]] = [], floors: [Double] = []
        for _ in 0..<ChildMeasurements.processes {
            samples.append(try ChildMeasurements.spawn("pg-open", database: url))
            if let floor = try ChildMeasurements.spawn("pg-open-floor", database: url)["ms"] { floors.append(floor) }
        }
        let firstScreens = samples.compactMap { $0["first_screen_ms"] }, wholes = samples.compactMap { $0["ms"] }
        guard firstScreens.count == ChildMeasurements.processes, floors.count == ChildMeasurements.processes else {
            throw BenchFailure("pg.open.1m: a child process failed")
        }
        var result = BenchResult(name: "pg.open.1m", medianMilliseconds: LiveQueryBenchmarks.median(firstScreens), runs: firstScreens.count)
        result.baseline = "floor: the same ordered SELECT read into an array"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(floors)
        result.add("whole_index_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(wholes))))
        result.add("whole_index_floor_ratio", .double(BenchResult.rounded(LiveQueryBenchmarks.median(zip(wholes, floors).map { $0 / $1 }))))
        result.add("first_screen_max_ms", .double(BenchResult.rounded(firstScreens.max() ?? 0)))
        for key in ["first_screen_rows", "in_result", "bytes_per_row", "peak_resident_bytes"] {
            let values = samples.compactMap { $0[key] }
            if !values.isEmpty { result.add(key, .integer(Int64(LiveQueryBenchmarks.median(values)))) }
        }
        result.add("processes", .integer(Int64(ChildMeasurements.processes)))
        return result
    }

    /// In a child process: one measurement of `pg.open.1m` (`pg-open`) or of its floor
    /// (`pg-open-floor`), as one JSON line.
    public static func child(_ which: String, url: String) async throws -> String {
        let configuration = try configuration(url: url)
        let clock = ContinuousClock()
        if which == "pg-open-floor" {
            let connection = try await connect(configuration, id: 3)
            let start = clock.now
            var rows: [(Int64, String, Int32)] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql + ", id"), logger: logger).decode((Int64, String, Int32).self) {
                rows.append(row)
            }
            let milliseconds = Stopwatch.milliseconds(start.duration(to: clock.now))
            blackHole(rows.count)
            try await connection.close()
            return #"{"ms": \#(milliseconds), "rows": \#(rows.count)}"#
        }
        let database = try await PostgresLiveDatabase.connect(configuration, logger: logger)
        let residentBefore = LiveQueryBenchmarks.residentBytes()
        let start = clock.now
        let query = try await PostgresLiveQuery.open(request, in: database)
        let opened = clock.now
        let whole = try await query.upToDate()
        let done = clock.now
        let added = LiveQueryBenchmarks.residentBytes() - residentBefore
        let peak = LiveQueryBenchmarks.peakResidentBytes()
        let line = #"{"first_screen_ms": \#(Stopwatch.milliseconds(start.duration(to: opened))), "ms": \#(Stopwatch.milliseconds(start.duration(to: done))), "#
            + #""first_screen_rows": \#(query.initialResult.count), "in_result": \#(whole.count), "bytes_per_row": \#(added / max(1, whole.count)), "#
            + #""peak_resident_bytes": \#(peak)}"#
        await database.close()
        return line
    }

    // MARK: - pg.update.1m

    /// Another session's one-row UPDATE that moves the row → the changeset at the live query,
    /// from the commit acknowledged to the update in hand.
    static func update(_ configuration: PostgresConnection.Configuration, writer: PostgresConnection) async throws -> BenchResult {
        let database = try await PostgresLiveDatabase.connect(configuration, logger: logger)
        defer { Task { await database.close() } }
        let query = try await PostgresLiveQuery.open(request, in: database)
        var events = query.events.makeAsyncIterator()
        _ = await events.next()   // .initial
        if !query.initialResult.isComplete {
            while case let .update(update)? = await events.next(), update.path != .firstFetchCompleted {}
        }
        var random = SeededRandomNumberGenerator(seed: 5)
        let clock = ContinuousClock()
        var latencies: [Double] = []
        var paths: Set<String> = []
        for _ in 0..<51 {
            // An odd id: a row of the result (flag = 1), renamed so that it moves.
            let id = Int64(Int.random(in: 0..<rows / 2, using: &random) * 2 + 1)
            var binds = PostgresBindings()
            binds.append(LiveQueryBenchmarks.randomName(&random))
            binds.append(id)
            try await execute(writer, "UPDATE item SET name = $1, version = version + 1 WHERE id = $2", binds)
            let committed = clock.now
            guard case let .update(update)? = await events.next() else { throw BenchFailure("pg.update.1m: the query stopped") }
            latencies.append(Stopwatch.milliseconds(committed.duration(to: clock.now)))
            paths.insert(update.path.description)
        }
        guard paths == ["incremental"] else { throw BenchFailure("pg.update.1m: expected the incremental path, got \(paths)") }
        // The live result equals a fresh SELECT.
        let live = try await query.upToDate()
        let fresh = try await identities(writer)
        guard live.rows(in: 0..<live.count).map(\.id) == fresh.sections[0].items.map(\.id) else {
            throw BenchFailure("pg.update.1m: the live result differs from a fresh SELECT")
        }
        var refetch: [Double] = []
        var previous = fresh
        for _ in 0..<5 {
            try await renameOne(writer, &random)
            let start = clock.now
            let next = try await identities(writer)
            blackHole(Changeset(from: previous, to: next))
            refetch.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            previous = next
        }
        let notified = try await notifyBaseline(configuration, writer: writer, previous: previous, random: &random)
        var result = BenchResult(name: "pg.update.1m", medianMilliseconds: LiveQueryBenchmarks.median(latencies), runs: latencies.count)
        result.baseline = "refetch (identity, version) + diff"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(refetch)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(latencies, 0.99))))
        result.add("notify_baseline", .string("LISTEN/NOTIFY + refetch (identity, version) + diff"))
        result.add("notify_baseline_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(notified))))
        result.add("notify_speedup", .double(BenchResult.rounded(LiveQueryBenchmarks.median(notified) / LiveQueryBenchmarks.median(latencies))))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(live.count)))
        result.add("capture", .string("replication stream"))
        await query.cancel()
        return result
    }

    static func texts(_ connection: PostgresConnection, _ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) { values.append(value) }
        return values
    }

    static func text(_ connection: PostgresConnection, _ sql: String) async throws -> String {
        try await texts(connection, sql).first ?? ""
    }

    static func renameOne(_ writer: PostgresConnection, _ random: inout SeededRandomNumberGenerator, notify: Bool = false) async throws {
        var binds = PostgresBindings()
        binds.append(LiveQueryBenchmarks.randomName(&random))
        binds.append(Int64(Int.random(in: 0..<rows / 2, using: &random) * 2 + 1))
        if notify {
            try await execute(writer, "BEGIN")
            try await execute(writer, "UPDATE item SET name = $1, version = version + 1 WHERE id = $2", binds)
            try await execute(writer, "NOTIFY livelist_bench")
            try await execute(writer, "COMMIT")
        } else {
            try await execute(writer, "UPDATE item SET name = $1, version = version + 1 WHERE id = $2", binds)
        }
    }

    /// The query's identities and versions, in order: what the baselines fetch.
    static func identities(_ connection: PostgresConnection) async throws -> ListSnapshot<SingleSection, VersionedItem<Int64, Int64>> {
        var items: [VersionedItem<Int64, Int64>] = []
        items.reserveCapacity(rows / 2)
        for try await (id, version) in try await connection.query(PostgresQuery(unsafeSQL: identitiesSQL), logger: logger).decode((Int64, Int32).self) {
            items.append(VersionedItem(id: id, version: Int64(version)))
        }
        return ListSnapshot(items: items)
    }

    /// What apps do today when they are told: a listener woken by NOTIFY refetches and diffs;
    /// from the commit acknowledged to the changeset in hand.
    static func notifyBaseline(_ configuration: PostgresConnection.Configuration, writer: PostgresConnection,
                               previous: ListSnapshot<SingleSection, VersionedItem<Int64, Int64>>,
                               random: inout SeededRandomNumberGenerator) async throws -> [Double] {
        let listener = try await connect(configuration, id: 7)
        let reader = try await connect(configuration, id: 8)
        defer {
            Task {
                try? await listener.close()
                try? await reader.close()
            }
        }
        let clock = ContinuousClock()
        var times: [Double] = []
        try await listener.listen(on: "livelist_bench") { notifications in
            var iterator = notifications.makeAsyncIterator()
            var previous = previous
            for _ in 0..<5 {
                try await renameOne(writer, &random, notify: true)
                let committed = clock.now
                _ = try await iterator.next()
                let next = try await identities(reader)
                blackHole(Changeset(from: previous, to: next))
                times.append(Stopwatch.milliseconds(committed.duration(to: clock.now)))
                previous = next
            }
        }
        return times
    }
}
