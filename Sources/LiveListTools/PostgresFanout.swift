import Foundation
import ListTesting
import LiveListServer
import LiveListServerPostgres
import LiveListWire
import LiveQueryPostgres
import PostgresNIO

/// `pg.fanout`: two server instances over one PostgreSQL database — each its own live database
/// (its own slot and connections), server and port, both in the bench process — with 1,000
/// subscribers each, in a load generator of their own, while another session commits 16 one-row
/// changes a second for 10 s. Commit → received latency, and every client (on either instance) at
/// the same last version, the applying client equal to the SELECT.
enum PostgresFanout {
    static let subscribersPerInstance = 1_000
    static let seconds = 10

    static func run(_ configuration: PostgresConnection.Configuration, writer: PostgresConnection) async throws -> BenchResult {
        _ = WireFanout.raiseDescriptorLimit()
        var instances: [(PostgresLiveDatabase, WireServer)] = []
        // The instances stop before the benchmark's cluster does (their queries would fail loudly).
        func shutDown() async {
            for (database, server) in instances {
                await server.shutDown()
                await database.close()
            }
        }
        do {
            let result = try await measure(configuration, writer: writer, instances: &instances)
            await shutDown()
            return result
        } catch {
            await shutDown()
            throw error
        }
    }

    private static func measure(_ configuration: PostgresConnection.Configuration, writer: PostgresConnection,
                                instances: inout [(PostgresLiveDatabase, WireServer)]) async throws -> BenchResult {
        let name = "pg.fanout"
        for _ in 0..<2 {
            let database = try await PostgresLiveDatabase.connect(configuration, logger: PostgresBenchmarks.logger)
            let server = LiveListServer(engine: PostgresEngine(database: database), queries: [
                PublishedQuery(name: "items", sql: PostgresBenchmarks.sql, version: "version"),
            ], logger: PostgresBenchmarks.logger)
            instances.append((database, try await WireServer.start(server, logger: PostgresBenchmarks.logger)))
        }
        let urls = instances.map(\.1.url)
        // The live queries open, and have their whole result, before the subscribers come: a first
        // screen completed while they listen is a 500k-row change, a reset to every one of them.
        guard let whole = Int(try await PostgresBenchmarks.text(writer, "SELECT count(*)::text FROM item WHERE flag = 1")) else {
            throw BenchFailure("\(name): no count of the query's rows")
        }
        let holders = try urls.map { url in
            let holder = try WireConnection(url)
            holder.subscribe(window: 0..<60)
            var count = -1
            while count != whole {
                guard case let .reset(reset) = try holder.next() else { throw BenchFailure("\(name): no reset") }
                count = reset.sections.reduce(0) { $0 + $1.count }
            }
            return holder
        }
        defer { for holder in holders { holder.close() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-pg-fanout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let commitsFile = directory.appendingPathComponent("commits.txt")
        let subscribers = subscribersPerInstance * urls.count
        let (process, input, lines) = try WireFanout.startLoadGenerator(subscribers: subscribers, commitsFile: commitsFile, urls: urls, name: name)
        var random = SeededRandomNumberGenerator(seed: 43)
        var commits: [String] = ["positions"]
        let cpuBefore = WireFanout.cpuSeconds()
        let interval = 1.0 / Double(WireFanout.commitsPerSecond)
        let start = Date().timeIntervalSince1970
        for index in 0..<(WireFanout.commitsPerSecond * seconds) {
            let wait = start + Double(index) * interval - Date().timeIntervalSince1970
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            let time = Date().timeIntervalSince1970
            try await PostgresBenchmarks.renameOne(writer, &random)
            // The WAL position just after the commit: the commit a client's version leads to is the
            // first whose position here is at or past it (nothing else writes meanwhile).
            let position = try await PostgresBenchmarks.text(writer, "SELECT pg_current_wal_insert_lsn()::text")
            commits.append("\(time) \(PostgresLSN(position).map { String($0.value) } ?? "0")")
        }
        try await Task.sleep(for: .seconds(1))
        let cpu = WireFanout.cpuSeconds() - cpuBefore
        try commits.joined(separator: "\n").write(to: commitsFile, atomically: true, encoding: .utf8)
        let count = try await PostgresBenchmarks.text(writer, "SELECT count(*)::text FROM item WHERE flag = 1")
        let first = try await PostgresBenchmarks.texts(writer, "SELECT id::text FROM item WHERE flag = 1 ORDER BY name, id LIMIT 60")
        try input.fileHandleForWriting.write(contentsOf: Data("\(count) \(first.joined(separator: ","))\n".utf8))
        try input.fileHandleForWriting.close()
        guard let report = lines.next(), let object = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any] else {
            throw BenchFailure("\(name): the load generator did not report")
        }
        process.waitUntilExit()
        guard object["equal"] as? Bool == true else { throw BenchFailure("\(name): a client's list differs from the SELECT: \(report)") }
        return result(object, commits: commits.count - 1, instances: urls.count, subscribers: subscribers,
                      cpuPerCommit: cpu * 1_000 / Double(commits.count - 1))
    }

    /// The benchmark's line, from the load generator's figures.
    private static func result(_ object: [String: Any], commits: Int, instances: Int, subscribers: Int, cpuPerCommit: Double) -> BenchResult {
        let figures = object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        var result = BenchResult(name: "pg.fanout", medianMilliseconds: figures["p50_ms"] ?? .nan, runs: commits)
        result.add("p99_ms", .double(BenchResult.rounded(figures["p99_ms"] ?? .nan)))
        result.add("max_ms", .double(BenchResult.rounded(figures["max_ms"] ?? .nan)))
        result.add("instances", .integer(Int64(instances)))
        result.add("subscribers", .integer(Int64(subscribers)))
        result.add("lost", .integer(Int64(figures["lost"] ?? -1)))
        result.add("resets", .integer(Int64(figures["resets"] ?? -1)))
        result.add("received_share", .double(BenchResult.rounded(figures["received_share"] ?? .nan)))
        result.add("bytes", .double(BenchResult.rounded(figures["bytes_per_commit_per_client"] ?? .nan)))
        result.add("servers_cpu_ms_per_commit", .double(BenchResult.rounded(cpuPerCommit)))
        result.add("load_generator_cpu_ms_per_commit", .double(BenchResult.rounded(figures["cpu_ms_per_commit"] ?? .nan)))
        result.add("setup", .string("2 instances in the bench process, each with its own slot and port; PostgreSQL and the load generator on the same cores"))
        return result
    }
}
