import Foundation
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// Queries grouped by the base table's key, and ORDER BY expressions, followed row by row: after
    /// every commit to any table their ids, order and values equal the SELECT, and a commit reads the
    /// groups it touched, not the whole aggregate.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresGroupedTests {
        /// Each ends with its identity, so that the SELECT's order is the list's.
        static let requests = [
            // A LEFT JOINed table aggregated, sorted by the aggregate (through its output name).
            "SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id GROUP BY c.id, c.name ORDER BY n DESC, c.name, c.id",
            // An INNER JOIN: a group enters with its first row and leaves with its last.
            "SELECT co.id, co.name, count(c.id) AS contacts FROM company co JOIN contact c ON c.company_id = co.id GROUP BY co.id ORDER BY co.name NULLS FIRST, co.id",
            // A many-to-one join beside the aggregated table; a filter on the base table; an ON filter; sums.
            """
            SELECT c.id, co.name AS company, max(m.subject) AS last, sum(m.score) AS total FROM contact c LEFT JOIN company co ON co.id = c.company_id \
            LEFT JOIN message m ON m.contact_id = c.id AND m.subject <> 'spam' WHERE c.name <> 'Blocked' GROUP BY c.id, co.name \
            ORDER BY sum(m.score) DESC NULLS LAST, c.id
            """,
            // Expressions over the row.
            "SELECT id, subject FROM message ORDER BY lower(subject), id",
            "SELECT id, name FROM contact ORDER BY length(name) DESC, name COLLATE \"C\", id",
        ]

        @Test("grouped and expression-ordered SELECTs are followed row by row, and equal the SELECT after every commit")
        func groupedOracle() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                try await PG.execute(writer, "SET TimeZone = 'UTC'")
                var queries: [(String, Int, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for sql in Self.requests {
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                    #expect(query.mode == .incremental, "\(sql): \(query.mode)")
                    queries.append((sql, query.columnNames.count, query, await PostgresListFollower(query)))
                }
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL grouped oracle")
                var random = SeededRandomNumberGenerator(seed: seed)
                for step in 0..<50 {
                    try await PostgresSQLTests.randomTransaction(writer, &random)
                    for (sql, columns, query, follower) in queries {
                        try await PostgresSQLTests.expectEqualsSelect(query, sql, columns: columns, follower, writer, "step \(step): \(sql), seed \(seed)")
                    }
                }
                for (sql, _, query, follower) in queries {
                    #expect(query.statistics.refetches <= 2, "\(sql): \(query.statistics)")
                    await MainActor.run { #expect(follower.failures.isEmpty) }
                    await follower.stop()
                }
            }
        }

        @Test("the engine's connections cut again and again in the middle of rounds: no commit is lost to grouped, joined and batched lists, whose values equal the SELECT")
        func connectionsCutMidRound() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema, timeout: .seconds(5)) { configuration, writer, database in
                try await PG.execute(writer, "SET TimeZone = 'UTC'")
                let sqls = [Self.requests[0], Self.requests[2], PostgresSQLTests.joined + " ORDER BY c.name, m.received DESC, m.id"]
                var queries: [(String, Int, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for sql in sqls {
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                    #expect(query.mode == .incremental, "\(sql): \(query.mode)")
                    queries.append((sql, query.columnNames.count, query, await PostgresListFollower(query)))
                }
                // Argument sets of one grouped SELECT, re-read together in one statement (a batch).
                let batched = """
                    SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id \
                    WHERE c.company_id <= $1 GROUP BY c.id ORDER BY count(m.id) DESC, c.id
                    """
                for limit in [2, 4, 6] {
                    let query = try await PostgresLiveQuery.open(PostgresBatchTests.request(batched, [.integer(Int64(limit))]), in: database)
                    #expect(query.mode == .incremental)
                    queries.append((PostgresBatchTests.literal(batched, [.integer(Int64(limit))]), query.columnNames.count, query,
                                    await PostgresListFollower(query)))
                }
                let writerProcess = try await PG.int64s(writer, "SELECT pg_backend_pid()::int8").first ?? 0
                let cutter = try await PostgresConnection.connect(configuration: configuration, id: 77, logger: PG.logger)
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL cut-connections")
                var random = SeededRandomNumberGenerator(seed: seed)
                for phase in 0..<4 {
                    // The engine's reading connections (not its replication stream, not the writer),
                    // cut every few milliseconds while commits come, each inside a transaction —
                    // a round, between the commits it took and the rows it read.
                    let cutting = Task {
                        var cuts = 0
                        while !Task.isCancelled {
                            try? await PG.execute(cutter, """
                                SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() \
                                AND pid NOT IN (pg_backend_pid(), \(writerProcess)) AND backend_type = 'client backend' \
                                AND state IN ('active', 'idle in transaction')
                                """)
                            cuts += 1
                            try? await Task.sleep(for: .milliseconds(Int.random(in: 1...8)))
                        }
                        return cuts
                    }
                    for _ in 0..<50 {
                        try await PostgresSQLTests.randomTransaction(writer, &random)
                        try await Task.sleep(for: .milliseconds(Int.random(in: 0...4, using: &random)))
                    }
                    cutting.cancel()
                    let cuts = await cutting.value
                    for (sql, columns, query, follower) in queries {
                        _ = try await PG.upToDate(query, within: 30)
                        try await PostgresSQLTests.expectEqualsSelect(query, sql, columns: columns, follower, writer,
                                                                      "phase \(phase) (\(cuts) cuts): \(sql), seed \(seed)")
                    }
                }
                try? await cutter.close()
                for (_, _, _, follower) in queries { await follower.stop() }
            }
        }

        @Test("a commit to an aggregated table reads the groups it touched: a move reads two, wherever the list is long")
        func readsTheGroupsTouched() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE folder (id bigint PRIMARY KEY, name text COLLATE "C");
                CREATE TABLE item (id bigint PRIMARY KEY, folder_id bigint, done boolean NOT NULL DEFAULT false);
                CREATE INDEX ON item (folder_id);
                INSERT INTO folder SELECT g, 'f' || lpad(g::text, 4, '0') FROM generate_series(1, 500) g;
                INSERT INTO item SELECT g, 1 + g % 500, g % 3 = 0 FROM generate_series(1, 20000) g;
                """) { _, writer, database in
                let sql = """
                    SELECT f.id, f.name, count(i.id) AS open FROM folder f LEFT JOIN item i ON i.folder_id = f.id AND NOT i.done \
                    GROUP BY f.id, f.name ORDER BY count(i.id) DESC, f.id
                    """
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                #expect(query.mode == .incremental)
                _ = try await query.upToDate()
                let before = query.statistics
                for step in 0..<10 {
                    // A move between folders, a delete, an insert: each touches at most two groups.
                    switch step % 3 {
                    case 0: try await PG.execute(writer, "UPDATE item SET folder_id = \(1 + (step * 37) % 500) WHERE id = \(100 + step)")
                    case 1: try await PG.execute(writer, "DELETE FROM item WHERE id = \(200 + step)")
                    default: try await PG.execute(writer, "INSERT INTO item VALUES (\(30000 + step), \(1 + step), false)")
                    }
                    let result = try await query.upToDate()
                    let expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: 3)
                    #expect(PG.ids(result).map(String.init) == expected.map { $0[0] ?? "" }, "step \(step)")
                }
                let after = query.statistics
                #expect(after.refetches == before.refetches, "\(after)")
                #expect(after.rowsRead - before.rowsRead <= 20, "10 commits of one row each read \(after.rowsRead - before.rowsRead) groups")
                let explanation = try await PostgresLiveQuery.explain(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                #expect(explanation.path == .incremental)
                #expect(explanation.notes.contains { $0.contains("grouped by") }, "\(explanation.notes)")
            }
        }

        @Test("groups that are not the base table's rows, HAVING and a filter over the aggregated rows refetch, with their reasons")
        func groupedShapesThatRefetch() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, _, database in
                let cases: [(String, RefetchReason.Shape)] = [
                    ("SELECT contact_id AS id, count(*) FROM message GROUP BY contact_id ORDER BY contact_id", .groupBy),
                    ("SELECT c.id, count(m.id) FROM contact c LEFT JOIN message m ON m.contact_id = c.id GROUP BY c.id HAVING count(m.id) > 1 ORDER BY c.id",
                     .having),
                    ("SELECT c.id, count(m.id) FROM contact c LEFT JOIN message m ON m.contact_id = c.id WHERE m.id IS NULL GROUP BY c.id ORDER BY c.id",
                     .filterReadsAggregatedTable("\"public\".\"message\"")),
                    ("SELECT c.id, count(m.id) FROM contact c LEFT JOIN message m ON m.contact_id = c.id GROUP BY c.id, m.subject ORDER BY c.id", .groupBy),
                    ("SELECT id, name FROM contact ORDER BY 2, id", .orderByExpression("2")),
                    ("SELECT id, name FROM contact ORDER BY lower(name) COLLATE \"und-x-icu\", id", .customCollation("und-x-icu (und)")),
                ]
                for (sql, shape) in cases {
                    let explanation = try await PostgresLiveQuery.explain(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                    guard case let .refetch(.request(shapes)) = explanation.path else {
                        Issue.record("\(sql) is \(explanation.path)")
                        continue
                    }
                    #expect(shapes.contains(shape), "\(sql): \(shapes)")
                }
            }
        }
    }
}

/// The groups an aggregated table's rows belong to, kept as they move.
@Suite struct ChildLinksTests {
    @Test("a row's move returns the group it left; a group dropped forgets its rows only")
    func moves() {
        var links = ChildLinks()
        #expect(links.move("1", to: "a") == nil)
        links.move("2", to: "a")
        links.move("3", to: "b")
        #expect(links.move("1", to: "b") == "a")
        #expect(links.group(of: "1") == "b")
        links.drop(group: "a")
        #expect(links.group(of: "2") == nil && links.group(of: "1") == "b" && links.count == 2)
        #expect(links.move("3", to: nil) == "b")
        links.drop(group: "b")
        #expect(links.count == 0)
        var other = ChildLinks()
        other.move("9", to: "c")
        links.absorb(other)
        #expect(links.group(of: "9") == "c")
    }
}
