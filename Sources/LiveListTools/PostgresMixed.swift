import Foundation
import ListTesting
import LiveListWire
import LiveQueryPostgres
import PostgresNIO

/// `pg.mixed`: what a deployment over PostgreSQL serves. Two `livelist serve --postgres`
/// processes (each its own persistent slot) over one database of 20,000 items, 400 people and
/// 200 folders; 10 published queries, followed row by row (a text sort under "C", sections, a
/// many-to-one JOIN sorted by the joined column, a LEFT JOIN, a JOIN filtered by an argument, ORDER
/// BY an expression), group by group (GROUP BY the base table's key with count, one sorted by the
/// count) and refetched (LIMIT), some with arguments; 200
/// subscribers in a load generator of their own, windows at the top and mid-list; two writer
/// sessions committing 50 times a second in all (renames, moves between sections, inserts,
/// deletes, reassignments, changes to the joined tables).
///
/// Each commit's end in the WAL comes from logical decoding (a temporary slot of the benchmark's
/// own, pgoutput): the writers record the transaction id and when they sent COMMIT, and the
/// decoded commit messages give each transaction's end position — the position a version names.
/// Reading `pg_current_wal_insert_lsn()` after the commit, as `pg.fanout` does, only bounds it
/// from above, and with two writers the other one's commit may lie in between.
///
/// Figures, per (subscriber, commit that wrote a table its query reads): from the writer sending
/// COMMIT to the subscriber receiving the first message whose version is at or past the commit's
/// end (same machine, one wall clock). `lost`: such pairs with no such message within 5 s of the
/// writers' stop.
enum PostgresMixed {
    static let name = "pg.mixed"
    static let commitsPerSecond = 50
    static let writerCount = 2
    static let drainSeconds = 5.0
    static let items = 20_000
    static let people = 400
    static let folders = 200
    static let owners = ["ada", "bob", "cy", "dee", "eve"]
    static let teams = ["red", "blue", "green", "gold"]

    struct Query {
        var name: String
        var sql: String
        var identity: String?
        var section: String?
        var version: String?
        /// Name and type (`integer` or `text`) of each parameter.
        var parameters: [(String, String)] = []
        var tables: [String]
        var followed: String
        var subscribers: Int
        /// The argument sets the subscribers use, in turn.
        var arguments: [[String: WireValue]] = [[:]]
    }

    static let queries: [Query] = [
        Query(name: "titles", sql: "SELECT id, title, priority, revision FROM mixed_item WHERE NOT done ORDER BY title",
              version: "revision", tables: ["mixed_item"], followed: "row by row", subscribers: 30),
        Query(name: "days", sql: "SELECT id, day, title, revision FROM mixed_item WHERE priority = :priority ORDER BY day DESC, title",
              section: "day", version: "revision", parameters: [("priority", "integer")], tables: ["mixed_item"], followed: "row by row",
              subscribers: 20, arguments: [1, 2, 3].map { ["priority": .integer($0)] }),
        Query(name: "folder", sql: "SELECT id, title, day, revision FROM mixed_item WHERE folder_id = :folder ORDER BY title",
              version: "revision", parameters: [("folder", "integer")], tables: ["mixed_item"], followed: "row by row",
              subscribers: 20, arguments: [1, 2, 3].map { ["folder": .integer($0)] }),
        Query(name: "by_author", sql: "SELECT i.id, p.name AS author, i.title FROM mixed_item i JOIN mixed_person p ON p.id = i.author_id ORDER BY p.name, i.title",
              tables: ["mixed_item", "mixed_person"], followed: "row by row", subscribers: 25),
        Query(name: "assigned", sql: "SELECT i.id, i.title, a.name AS assignee FROM mixed_item i LEFT JOIN mixed_person a ON a.id = i.assignee_id WHERE i.priority >= 3 ORDER BY i.title",
              tables: ["mixed_item", "mixed_person"], followed: "row by row", subscribers: 20),
        Query(name: "owner", sql: "SELECT i.id, f.name AS folder, i.title FROM mixed_item i JOIN mixed_folder f ON f.id = i.folder_id WHERE f.owner = :owner ORDER BY f.name, i.title",
              parameters: [("owner", "text")], tables: ["mixed_item", "mixed_folder"], followed: "row by row",
              subscribers: 20, arguments: ["ada", "bob", "cy"].map { ["owner": .text($0)] }),
        Query(name: "folder_counts", sql: """
            SELECT f.id, f.name, count(i.id) AS open FROM mixed_folder f LEFT JOIN mixed_item i ON i.folder_id = f.id AND NOT i.done \
            WHERE f.owner = :owner GROUP BY f.id, f.name ORDER BY f.name
            """,
              identity: "id", parameters: [("owner", "text")], tables: ["mixed_item", "mixed_folder"], followed: "group by group (GROUP BY the base table's key)",
              subscribers: 15, arguments: ["ada", "bob"].map { ["owner": .text($0)] }),
        Query(name: "recent", sql: "SELECT id, title, revision FROM mixed_item ORDER BY revision DESC, id LIMIT 100",
              identity: "id", tables: ["mixed_item"], followed: "refetched (LIMIT)", subscribers: 20),
        Query(name: "lowered", sql: "SELECT id, title FROM mixed_item WHERE folder_id = :folder ORDER BY lower(title), id",
              identity: "id", parameters: [("folder", "integer")], tables: ["mixed_item"], followed: "row by row (ORDER BY an expression)",
              subscribers: 15, arguments: [1, 2, 3].map { ["folder": .integer($0)] }),
        Query(name: "team_load", sql: """
            SELECT p.id, p.name, count(i.id) AS assigned FROM mixed_person p LEFT JOIN mixed_item i ON i.assignee_id = p.id \
            WHERE p.team = :team GROUP BY p.id, p.name ORDER BY count(i.id) DESC, p.name
            """,
              identity: "id", parameters: [("team", "text")], tables: ["mixed_item", "mixed_person"], followed: "group by group (ORDER BY an aggregate)",
              subscribers: 15, arguments: ["red", "blue"].map { ["team": .text($0)] }),
    ]

    // MARK: - The run

    static func run(_ configuration: PostgresConnection.Configuration, url: String, quick: Bool) async throws -> BenchResult {
        let seconds = quick ? 5 : 20
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-pg-mixed-\(tag)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let setup = try await PostgresBenchmarks.connect(configuration, id: 21)
        var servers: [ServeProcess] = []
        let slots = (1...2).map { "livelist_bench_mixed_\(tag)_\($0)" }
        do {
            let result = try await measure(configuration, url: url, seconds: seconds, tag: tag, directory: directory, setup: setup,
                                           slots: slots, servers: &servers)
            await cleanUp(setup, servers: servers, slots: slots, tag: tag)
            try? FileManager.default.removeItem(at: directory)
            return result
        } catch {
            await cleanUp(setup, servers: servers, slots: slots, tag: tag)
            // The servers' output stays for a look.
            throw BenchFailure("\(error) (the servers' output: \(directory.path))")
        }
    }

    private static func measure(_ configuration: PostgresConnection.Configuration, url: String, seconds: Int, tag: String, directory: URL,
                                setup: PostgresConnection, slots: [String], servers: inout [ServeProcess]) async throws -> BenchResult {
        try await load(setup)
        // The benchmark's own view of the commits: a publication of its tables and a temporary
        // slot, made before anything else follows the database (making a slot waits for the
        // transactions running then).
        let publication = "livelist_bench_mixed_\(tag)", commitSlot = "livelist_bench_mixed_\(tag)_commits"
        try await PostgresBenchmarks.execute(setup, "CREATE PUBLICATION \(publication) FOR TABLE mixed_item, mixed_person, mixed_folder")
        _ = try await PostgresBenchmarks.text(setup, "SELECT pg_create_logical_replication_slot('\(commitSlot)', 'pgoutput', true)::text")

        let configFile = directory.appendingPathComponent("queries.yaml")
        try yaml().write(to: configFile, atomically: true, encoding: .utf8)
        // One after the other: two instances that start together over a database without the
        // publication both try to create it, and the one that loses exits.
        var urls: [String] = []
        for (index, slot) in slots.enumerated() {
            servers.append(try ServeProcess.start(arguments: ["serve", "--postgres", url, "--slot", slot, "--config", configFile.path, "--port", "0"],
                                                  log: directory.appendingPathComponent("serve-\(index + 1)")))
            urls.append(try servers[index].waitForURL(timeout: 60))
        }

        let specification = try await specification(urls: urls, setup)
        let specificationFile = directory.appendingPathComponent("specification.json")
        try JSONEncoder().encode(specification).write(to: specificationFile)
        let (generator, input, lines) = try startLoadGenerator(specificationFile)
        defer { if generator.isRunning { generator.terminate() } }

        // The run: two writers, each on its own connection, interleaved.
        let connections = [try await PostgresBenchmarks.connect(configuration, id: 22), try await PostgresBenchmarks.connect(configuration, id: 23)]
        let postmaster = try await postmasterProcess(setup, url: url)
        let cpuBefore = (servers.map { ProcessCPU.seconds(of: $0.process.processIdentifier) ?? .nan }, postmaster.map { ProcessCPU.clusterSeconds(postmaster: $0) })
        let perWriter = commitsPerSecond * seconds / writerCount
        let interval = 1.0 / Double(commitsPerSecond)
        let start = Date().timeIntervalSince1970 + 0.05
        async let first = write(connections[0], writer: 0, commits: perWriter, start: start, interval: interval)
        async let second = write(connections[1], writer: 1, commits: perWriter, start: start, interval: interval)
        let written = try await first + second
        let stopped = Date().timeIntervalSince1970
        for connection in connections { try? await connection.close() }

        let commits = try await decodedCommits(written, setup, slot: commitSlot, publication: publication)
        let commitsFile = directory.appendingPathComponent("commits.json")
        try JSONEncoder().encode(MixedCommits(commits: commits, stopped: stopped, drainSeconds: drainSeconds)).write(to: commitsFile)
        try input.fileHandleForWriting.write(contentsOf: Data("\(commitsFile.path)\n".utf8))
        try input.fileHandleForWriting.close()
        guard let report = lines.next(), let object = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any] else {
            throw BenchFailure("\(name): the load generator did not report")
        }
        let cpuAfter = (servers.map { ProcessCPU.seconds(of: $0.process.processIdentifier) ?? .nan }, postmaster.map { ProcessCPU.clusterSeconds(postmaster: $0) })
        generator.waitUntilExit()
        for server in servers where !server.process.isRunning {
            throw BenchFailure("\(name): a livelist serve process exited during the run: \(server.logTail())")
        }
        let serversCPU = zip(cpuAfter.0, cpuBefore.0).map { $0 - $1 }.reduce(0, +)
        let postgresCPU = cpuAfter.1.flatMap { after in cpuBefore.1.map { after - $0 } }
        return result(object, commits: commits, seconds: stopped - start, subscribers: specification.subscribers.count,
                      serversCPU: serversCPU, postgresCPU: postgresCPU)
    }

    /// The subscribers, their windows, and the lists their queries have (for the warmers).
    private static func specification(urls: [String], _ setup: PostgresConnection) async throws -> MixedSpecification {
        var counts: [String: Int] = [:]
        var specification = MixedSpecification(warmers: [], subscribers: [])
        for query in queries {
            for arguments in query.arguments {
                let key = subscribeText(query, arguments, window: 0..<0)
                let count = Int(try await PostgresBenchmarks.text(setup, "SELECT count(*)::text FROM (\(literalSQL(query, arguments))) q")) ?? -1
                counts[key] = count
                for url in urls { specification.warmers.append(.init(url: url, subscribe: key, count: count)) }
            }
            for index in 0..<query.subscribers {
                let arguments = query.arguments[index % query.arguments.count]
                let count = counts[subscribeText(query, arguments, window: 0..<0)] ?? 0
                // Every fourth subscriber of a long enough list looks at its middle.
                let start = index % 4 == 3 && count >= 100 ? count / 2 - 25 : 0
                let instance = (index / query.arguments.count) % urls.count
                specification.subscribers.append(.init(url: urls[instance], query: query.name, subscribe: subscribeText(query, arguments, window: start..<start + 50),
                                                       tables: query.tables))
            }
        }
        return specification
    }

    /// The commits `written` with their ends in the WAL, read from the benchmark's own slot.
    private static func decodedCommits(_ written: [Written], _ setup: PostgresConnection, slot commitSlot: String,
                                       publication: String) async throws -> [MixedCommits.Commit] {
        // Each transaction's end in the WAL, from the commit messages pgoutput decodes (C, flags,
        // the commit's position, then its end: bytes 11–18).
        var ends: [UInt32: UInt64] = [:]
        for line in try await PostgresBenchmarks.texts(setup, """
            SELECT xid::text || ' ' || encode(substr(data, 11, 8), 'hex') FROM pg_logical_slot_get_binary_changes('\(commitSlot)', NULL, NULL, \
            'proto_version', '1', 'publication_names', '\(publication)') WHERE get_byte(data, 0) = 67
            """) {
            let parts = line.split(separator: " ")
            if parts.count == 2, let xid = UInt32(parts[0]), let end = UInt64(parts[1], radix: 16) { ends[xid] = end }
        }
        let commits = written.compactMap { commit in
            ends[commit.xid].map { MixedCommits.Commit(end: $0, sent: commit.sent, acknowledged: commit.acknowledged, tables: commit.tables) }
        }
        guard commits.count == written.count else {
            throw BenchFailure("\(name): \(written.count - commits.count) of \(written.count) commits are not in the decoded WAL")
        }
        return commits
    }

    /// The benchmark's line, from the load generator's figures.
    private static func result(_ object: [String: Any], commits: [MixedCommits.Commit], seconds: Double, subscribers: Int,
                               serversCPU: Double, postgresCPU: Double?) -> BenchResult {
        let figures = object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        func figure(_ key: String) -> Double { figures[key] ?? .nan }
        let median = figure("median_ms"), p99 = figure("p99_ms")
        let lost = Int(figures["lost"] ?? -1), resets = Int(figures["resets"] ?? -1)
        let count = Double(max(1, commits.count))
        var result = BenchResult(name: name, medianMilliseconds: median, runs: commits.count)
        result.add("p99_ms", .double(BenchResult.rounded(p99)))
        result.add("max_ms", .double(BenchResult.rounded(figure("max_ms"))))
        result.add("lost", .integer(Int64(lost)))
        result.add("resets", .integer(Int64(resets)))
        result.add("commits", .integer(Int64(commits.count)))
        result.add("commits_per_second", .double(BenchResult.rounded(Double(commits.count) / seconds)))
        result.add("subscribers", .integer(Int64(subscribers)))
        result.add("queries", .integer(Int64(queries.count)))
        result.add("instances", .integer(2))
        result.add("pairs", .integer(Int64(figures["pairs"] ?? -1)))
        result.add("servers_cpu_ms_per_commit", .double(BenchResult.rounded(serversCPU * 1_000 / count)))
        result.add("postgres_cpu_ms_per_commit", postgresCPU.map { .double(BenchResult.rounded($0 * 1_000 / count)) } ?? .null)
        result.add("load_generator_cpu_ms_per_commit", .double(BenchResult.rounded(figure("load_generator_cpu_ms_per_commit"))))
        result.add("bytes_per_commit_per_client", .double(BenchResult.rounded(figure("bytes") / count / Double(max(1, subscribers)))))
        result.add("messages_per_commit_per_client", .double(BenchResult.rounded(figure("frames") / count / Double(max(1, subscribers)))))
        result.add("empty_changes_share", .double(BenchResult.rounded(figure("empty") / max(1, figure("frames")))))
        result.add("server_seen_median_ms", .double(BenchResult.rounded(figure("server_seen_median_ms"))))
        result.add("server_seen_p99_ms", .double(BenchResult.rounded(figure("server_seen_p99_ms"))))
        let commitTimes = commits.map { ($0.acknowledged - $0.sent) * 1_000 }
        result.add("commit_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(commitTimes))))
        result.add("gaps", .integer(Int64(figures["gaps"] ?? -1)))
        result.add("went_back", .integer(Int64(figures["went_back"] ?? -1)))
        result.add("unmatched_versions", .integer(Int64(figures["unmatched_versions"] ?? -1)))
        result.add("errors", .integer(Int64(figures["errors"] ?? -1)))
        result.add("drain_ms", .double(BenchResult.rounded(figure("drain_ms"))))
        if let byQuery = object["by_query"] as? [String: [String: Any]] {
            result.add("by_query", .object(queries.compactMap { query in
                guard let entry = byQuery[query.name] else { return nil }
                let numbers = entry.compactMapValues { ($0 as? NSNumber)?.doubleValue }
                return .init(key: query.name, value: .object([
                    .init(key: "median_ms", value: .double(numbers["median_ms"] ?? .nan)),
                    .init(key: "p99_ms", value: .double(numbers["p99_ms"] ?? .nan)),
                    .init(key: "lost", value: .integer(Int64(numbers["lost"] ?? -1))),
                    .init(key: "pairs", value: .integer(Int64(numbers["pairs"] ?? -1))),
                ]))
            }))
        }
        for key in ["lost_examples", "error_examples", "slowest"] {
            if let examples = object[key] as? [String], !examples.isEmpty { result.add(key, .array(examples.map { .string($0) })) }
        }
        result.add("setup", .string("2 livelist serve --postgres processes (persistent slots), \(items) items, \(people) people, \(folders) folders; "
                                    + "\(writerCount) writer sessions; the load generator, PostgreSQL and the servers on the same cores"))
        var missed: [String] = []
        if !(median <= 10) { missed.append("median \(BenchResult.format(median)) ms > 10 ms") }
        if !(p99 <= 50) { missed.append("p99 \(BenchResult.format(p99)) ms > 50 ms") }
        if lost != 0 { missed.append("lost \(lost) ≠ 0") }
        if resets != 0 { missed.append("resets \(resets) ≠ 0") }
        result.add("budget_met", .bool(missed.isEmpty))
        result.notes.append("budget (median ≤ 10 ms, p99 ≤ 50 ms, lost 0, resets 0): " + (missed.isEmpty ? "met" : "missed — " + missed.joined(separator: ", ")))
        return result
    }

    // MARK: - Writers

    struct Written {
        var xid: UInt32
        var sent: Double
        var acknowledged: Double
        var tables: [String]
    }

    /// One writer session: `commits` transactions, one every `writerCount` intervals from
    /// `start` (offset by its number), each touching rows only this writer touches (ids of its
    /// parity), so that no transaction waits for the other writer's or changes nothing.
    static func write(_ connection: PostgresConnection, writer: Int, commits: Int, start: Double, interval: Double) async throws -> [Written] {
        var random = SeededRandomNumberGenerator(seed: 71 + UInt64(writer))
        var live = (1...Int64(items)).filter { Int($0) % writerCount == writer }
        var nextID = Int64(1_000_000 + writer)
        let people = (1...Int64(Self.people)).filter { Int($0) % writerCount == writer }
        let folders = (1...Int64(Self.folders)).filter { Int($0) % writerCount == writer }
        var written: [Written] = []
        written.reserveCapacity(commits)
        for index in 0..<commits {
            let wait = start + Double(index * writerCount + writer) * interval - Date().timeIntervalSince1970
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            try await PostgresBenchmarks.execute(connection, "BEGIN")
            guard let xid = UInt32(try await PostgresBenchmarks.text(connection, "SELECT (txid_current() % 4294967296)::text")) else {
                throw BenchFailure("\(name): no transaction id")
            }
            var binds = PostgresBindings()
            let kind = Int.random(in: 0..<100, using: &random)
            let item = live[Int.random(in: 0..<live.count, using: &random)]
            var tables = ["mixed_item"]
            switch kind {
            case 0..<28:   // a rename: the row moves in every list sorted by title
                binds.append(title(&random))
                binds.append(item)
                try await PostgresBenchmarks.execute(connection, "UPDATE mixed_item SET title = $1, revision = revision + 1 WHERE id = $2", binds)
            case 28..<38:   // another day and priority: it moves between sections, in and out of lists
                binds.append(day(&random))
                binds.append(Int64.random(in: 0...4, using: &random))
                binds.append(item)
                try await PostgresBenchmarks.execute(connection, "UPDATE mixed_item SET day = $1::date, priority = $2, revision = revision + 1 WHERE id = $3", binds)
            case 38..<50:
                appendItem(nextID, to: &binds, &random)
                try await PostgresBenchmarks.execute(connection, """
                    INSERT INTO mixed_item (id, title, folder_id, author_id, assignee_id, day, priority, done) VALUES ($1, $2, $3, $4, $5, $6::date, $7, $8)
                    """, binds)
                live.append(nextID)
                nextID += Int64(writerCount)
            case 50..<60:
                binds.append(item)
                try await PostgresBenchmarks.execute(connection, "DELETE FROM mixed_item WHERE id = $1", binds)
                live.removeAll { $0 == item }
            case 60..<68:   // another assignee (the LEFT JOIN's link), or none
                if Bool.random(using: &random) { binds.appendNull() } else { binds.append(Int64.random(in: 1...Int64(Self.people), using: &random)) }
                binds.append(item)
                try await PostgresBenchmarks.execute(connection, "UPDATE mixed_item SET assignee_id = $1, revision = revision + 1 WHERE id = $2", binds)
            case 68..<73:   // another folder (the JOIN's link), done toggled
                binds.append(Int64.random(in: 1...Int64(Self.folders), using: &random))
                binds.append(item)
                try await PostgresBenchmarks.execute(connection, "UPDATE mixed_item SET folder_id = $1, done = NOT done, revision = revision + 1 WHERE id = $2", binds)
            case 73..<88:   // a person renamed: their items move in the list sorted by author
                tables = ["mixed_person"]
                binds.append(title(&random))
                binds.append(people[Int.random(in: 0..<people.count, using: &random)])
                try await PostgresBenchmarks.execute(connection, "UPDATE mixed_person SET name = $1 WHERE id = $2", binds)
            default:   // a folder renamed, or given to another owner (its items leave one list, join another)
                tables = ["mixed_folder"]
                let folder = folders[Int.random(in: 0..<folders.count, using: &random)]
                if Int.random(in: 0..<5, using: &random) == 0 {
                    binds.append(owners[Int.random(in: 0..<owners.count, using: &random)])
                    binds.append(folder)
                    try await PostgresBenchmarks.execute(connection, "UPDATE mixed_folder SET owner = $1 WHERE id = $2", binds)
                } else {
                    binds.append(title(&random))
                    binds.append(folder)
                    try await PostgresBenchmarks.execute(connection, "UPDATE mixed_folder SET name = $1 WHERE id = $2", binds)
                }
            }
            let sent = Date().timeIntervalSince1970
            try await PostgresBenchmarks.execute(connection, "COMMIT")
            written.append(Written(xid: xid, sent: sent, acknowledged: Date().timeIntervalSince1970, tables: tables))
        }
        return written
    }

    // MARK: - Queries, servers, load generator

    /// The configuration file of `livelist serve` (docs/SERVER.md).
    static func yaml() -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        var lines = ["queries:"]
        for query in queries {
            lines.append("  - name: \(query.name)")
            lines.append("    sql: \(quoted(query.sql))")
            if let identity = query.identity { lines.append("    identity: \(identity)") }
            if let section = query.section { lines.append("    section: \(section)") }
            if let version = query.version { lines.append("    version: \(version)") }
            if !query.parameters.isEmpty {
                lines.append("    parameters:")
                for (name, type) in query.parameters { lines.append("      - { name: \(name), type: \(type) }") }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func subscribeText(_ query: Query, _ arguments: [String: WireValue], window: Range<Int>) -> String {
        ClientMessage.subscribe(WireSubscription(sub: 1, query: query.name, arguments: arguments, window: WireWindow(window))).encoded()
    }

    /// The query's SELECT with its arguments written in (for counting its rows).
    static func literalSQL(_ query: Query, _ arguments: [String: WireValue]) -> String {
        var sql = query.sql
        for (name, value) in arguments {
            let literal = switch value {
            case let .integer(number): String(number)
            case let .text(text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            default: "NULL"
            }
            sql = sql.replacingOccurrences(of: ":" + name, with: literal)
        }
        return sql
    }

    static func startLoadGenerator(_ specification: URL) throws -> (Process, Pipe, LineReader) {
        try LoadGeneratorProcess.start(["--child", "mixed:\(specification.path)"], name: name)
    }

    /// PostgreSQL's postmaster, when the server runs on this machine: the parent of this
    /// session's backend, both named `postgres`; `nil` for a server elsewhere (its CPU cannot be
    /// read from here).
    static func postmasterProcess(_ connection: PostgresConnection, url: String) async throws -> Int32? {
        guard isLocal(url), let backend = Int32(try await PostgresBenchmarks.text(connection, "SELECT pg_backend_pid()::text")),
              let stat = ProcessCPU.stat(backend), stat.command == "postgres",
              let parent = ProcessCPU.stat(stat.parent), parent.command == "postgres" else { return nil }
        return stat.parent
    }

    /// Whether the URL names a server on this machine: a Unix socket, or a loopback address.
    static func isLocal(_ url: String) -> Bool {
        guard let components = URLComponents(string: url) else { return false }
        var host = components.host ?? ""
        if let socket = components.queryItems?.first(where: { $0.name == "host" })?.value { host = socket }
        return host.isEmpty || host.hasPrefix("/") || ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host)
    }

    /// Stops the servers, then drops what the run made: their slots, the publication, the tables.
    static func cleanUp(_ setup: PostgresConnection, servers: [ServeProcess], slots: [String], tag: String) async {
        for server in servers { server.stop() }
        let names = slots.map { "'\($0)'" }.joined(separator: ", ")
        for _ in 0..<50 {
            let left = (try? await PostgresBenchmarks.text(setup, "SELECT count(*)::text FROM pg_replication_slots WHERE slot_name IN (\(names))")) ?? "0"
            if left == "0" { break }
            _ = try? await PostgresBenchmarks.texts(setup, "SELECT pg_drop_replication_slot(slot_name)::text FROM pg_replication_slots WHERE slot_name IN (\(names)) AND NOT active")
            try? await Task.sleep(for: .milliseconds(100))
        }
        try? await PostgresBenchmarks.execute(setup, "DROP PUBLICATION IF EXISTS livelist_bench_mixed_\(tag)")
        try? await PostgresBenchmarks.execute(setup, "DROP TABLE IF EXISTS mixed_item, mixed_person, mixed_folder")
        try? await setup.close()
    }
}
