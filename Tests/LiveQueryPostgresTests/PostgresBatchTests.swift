import Foundation
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// Queries that differ only in their arguments re-read a round's rows in one statement, and each
    /// list still equals its own SELECT; a batch that fails leaves each query to read on its own.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresBatchTests {
        static func request(_ sql: String, _ values: [SQLValue]) -> PostgresLiveQueryRequest<Int64> {
            PostgresLiveQueryRequest(sql: sql, values: values, identity: "id", as: Int64.self)
        }

        /// `steps` random transactions (`PostgresSQLTests.randomTransaction`, seeded and the seed
        /// printed under `label`), each query's result equal to its SELECT (by identity) after each.
        static func randomCommits(_ queries: [(String, PostgresLiveQuery<Int64>)], _ writer: PostgresConnection, steps: Int,
                                  label: String) async throws {
            let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL \(label)")
            var random = SeededRandomNumberGenerator(seed: seed)
            for step in 0..<steps {
                try await PostgresSQLTests.randomTransaction(writer, &random)
                for (sql, query) in queries {
                    let result = try await query.upToDate()
                    let expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: query.columnNames.count)
                    #expect(PG.ids(result).map(String.init) == expected.map { $0[0] ?? "" }, "step \(step): \(sql), seed \(seed)")
                }
            }
        }

        /// After a commit: `query` brought up to date, its result and the list that followed its
        /// changesets equal to `sql`'s SELECT (by identity, its first of `columns`), no failure said.
        static func expectExact(_ query: PostgresLiveQuery<Int64>, _ follower: PostgresListFollower<Int64>, _ sql: String,
                                _ writer: PostgresConnection, columns: Int, step: Int, seed: UInt64) async throws {
            let result = try await query.upToDate()
            await follower.waitFor(result)
            let expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: columns).map { $0[0] ?? "" }
            #expect(PG.ids(result).map(String.init) == expected, "step \(step): \(sql), seed \(seed)")
            let (listed, failures) = await MainActor.run {
                (follower.dataSource.snapshot.sections.flatMap(\.items).map { String($0.id) }, follower.failures)
            }
            #expect(listed == expected, "step \(step): the list that followed \(sql), seed \(seed)")
            #expect(failures.isEmpty, "step \(step): \(sql): \(failures)")
        }

        /// `sql` with its `$n` written as literals, for the oracle's SELECT.
        static func literal(_ sql: String, _ values: [SQLValue]) -> String {
            var text = sql
            for (index, value) in values.enumerated().reversed() {
                let literal = switch value {
                case let .integer(number): String(number)
                case let .text(text): PostgresSQLTests.quoted(text.string)
                default: "NULL"
                }
                text = text.replacingOccurrences(of: "$\(index + 1)", with: literal)
            }
            return text
        }

        @Test("argument sets of one SELECT re-read together, each equal to its SELECT after every commit")
        func batchesFollowExactly() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                let shapes: [(String, [[SQLValue]])] = [
                    ("SELECT m.id, m.subject, m.revision FROM message m WHERE m.contact_id = $1 ORDER BY m.subject, m.id",
                     (1...5).map { [.integer(Int64($0))] }),
                    ("SELECT c.id, c.name FROM contact c WHERE c.name <> $1 AND c.company_id <= $2 ORDER BY c.name, c.id",
                     [["n1", 3], ["n2", 5], ["Zoë", 6]].map { [.text(SQLText($0[0] as? String ?? "")), .integer(Int64($0[1] as? Int ?? 0))] }),
                    // A many-to-one join: a contact's rename reaches each argument set's messages.
                    ("SELECT m.id, c.name AS sender, m.subject FROM message m JOIN contact c ON c.id = m.contact_id WHERE m.contact_id <= $1 ORDER BY c.name, m.id",
                     [3, 6, 9].map { [.integer(Int64($0))] }),
                    // Grouped: the aggregated rows' moves are looked up once for every argument set.
                    ("SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id WHERE c.company_id <= $1 GROUP BY c.id ORDER BY count(m.id) DESC, c.id",
                     [2, 4, 6].map { [.integer(Int64($0))] }),
                ]
                var queries: [(String, PostgresLiveQuery<Int64>)] = []
                for (sql, sets) in shapes {
                    for values in sets {
                        let query = try await PostgresLiveQuery.open(Self.request(sql, values), in: database)
                        #expect(query.mode == .incremental)
                        queries.append((Self.literal(sql, values), query))
                    }
                }
                try await Self.randomCommits(queries, writer, steps: 40, label: "batch oracle")
                let batches = await database.engine.batchesRead
                let diagnostics = await database.engine.diagnostics
                #expect(batches > 0, "\(diagnostics)")
                for (sql, query) in queries { #expect(query.statistics.refetches <= 1, "\(sql): \(query.statistics)") }
            }
        }

        @Test("a batch whose statement fails puts its work back: the failing query says so, the others stay exact")
        func failingBatch() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE t (id bigint PRIMARY KEY, x bigint NOT NULL, label text COLLATE "C");
                INSERT INTO t SELECT g, g % 4, 'l' || g FROM generate_series(1, 20) g;
                """) { _, writer, database in
                // Divides by zero once a row with x = $1 + 10 comes.
                let sql = "SELECT id, label FROM t WHERE 100 / (x - ($1 + 10)) <> 0 ORDER BY label, id"
                var queries: [(Int64, PostgresLiveQuery<Int64>)] = []
                for k in Int64(0)..<3 {
                    queries.append((k, try await PostgresLiveQuery.open(Self.request(sql, [.integer(k)]), in: database)))
                }
                let follower = await PostgresListFollower(queries[1].1)
                try await PG.execute(writer, "UPDATE t SET label = label || '!' WHERE id <= 3")
                for (_, query) in queries { _ = try await query.upToDate() }
                let batchesBefore = await database.engine.batchesRead
                #expect(batchesBefore > 0)
                // x = 11 fails the query of k = 1 only.
                try await PG.execute(writer, "UPDATE t SET x = 11, label = 'eleven' WHERE id = 5")
                for (k, query) in queries where k != 1 {
                    let result = try await query.upToDate()
                    let expected = try await PostgresSQLTests.expectedRows(writer, Self.literal(sql, [.integer(k)]), columns: 2)
                    #expect(PG.ids(result).map(String.init) == expected.map { $0[0] ?? "" }, "k = \(k)")
                }
                try await within("the failing query's failure", seconds: 10) {
                    while follower.failures.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                }
                await follower.stop()
            }
        }

        @Test("a read that fails among a round's statements sent together: the queries read before it stay applied, the rest read again, none but it fails, every other list equals its SELECT")
        func failingAmongSent() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE grp (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL);
                INSERT INTO grp SELECT g, CASE WHEN g % 2 = 0 THEN 'hidden' ELSE 'g' || g END FROM generate_series(1, 6) g;
                CREATE TABLE t (id bigint PRIMARY KEY, x bigint NOT NULL, label text COLLATE "C", grp_id bigint NOT NULL);
                INSERT INTO t SELECT g, g % 4, 'l' || g, 1 + g % 6 FROM generate_series(1, 20) g;
                """) { _, writer, database in
                // Each its own statement (no arguments, so no batch of several), all sent at once;
                // the one that divides by zero once a row with x = 11 comes sits among them. The
                // grouped one reads more as it is applied (the rows of a group that entered it).
                let failing = "SELECT id, label FROM t WHERE 100 / (x - 11) <> 0 ORDER BY label, id"
                let others = ["SELECT id, label FROM t ORDER BY label, id", "SELECT id, x FROM t WHERE x >= 0 ORDER BY x, id",
                              "SELECT id, label FROM t WHERE id % 2 = 1 ORDER BY label DESC, id", "SELECT id, label, x FROM t WHERE label <> '' ORDER BY id",
                              "SELECT g.id, g.name, count(t.id) AS n FROM grp g LEFT JOIN t ON t.grp_id = g.id WHERE g.name <> 'hidden' GROUP BY g.id ORDER BY g.name, g.id",
                              "SELECT g.id, count(t.id) AS n FROM grp g LEFT JOIN t ON t.grp_id = g.id WHERE g.name <> 'hidden' AND g.id > 1 GROUP BY g.id ORDER BY g.id DESC",
                              "SELECT g.id, g.name, count(t.id) AS n FROM grp g JOIN t ON t.grp_id = g.id WHERE g.name <> 'hidden' AND g.id < 6 GROUP BY g.id ORDER BY g.name DESC, g.id"]
                var queries: [(String, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for sql in others + [failing] {
                    let query = try await PostgresLiveQuery.open(Self.request(sql, []), in: database)
                    queries.append((sql, query, await PostgresListFollower(query)))
                }
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL failing-among-sent")
                var random = SeededRandomNumberGenerator(seed: seed)
                for step in 0..<24 {
                    // Every third commit brings a row the failing query cannot read, and a group
                    // into the grouped results; the others hide a group.
                    let id = Int64.random(in: 1...20, using: &random)
                    let x = step % 3 == 1 ? 11 : Int64.random(in: 0...3, using: &random)
                    // One transaction: a row of t, and a group that enters or leaves the grouped results.
                    let group = Int64.random(in: 1...6, using: &random)
                    try await PG.execute(writer, "BEGIN")
                    try await PG.execute(writer, "UPDATE t SET x = \(x), label = 'l\(Int.random(in: 0...99, using: &random))', grp_id = \(group) WHERE id = \(id)")
                    if x == 11 {
                        try await PG.execute(writer, "UPDATE grp SET name = 'g' || id WHERE id = (SELECT min(id) FROM grp WHERE name = 'hidden')")
                    } else {
                        try await PG.execute(writer, "UPDATE grp SET name = 'hidden' WHERE id = \(group)")
                    }
                    try await PG.execute(writer, "COMMIT")
                    for (sql, query, follower) in queries where sql != failing {
                        try await Self.expectExact(query, follower, sql, writer, columns: 2, step: step, seed: seed)
                    }
                }
                let failingFollower = queries[queries.count - 1].2
                try await within("the failing query's failure", seconds: 10) {
                    while await MainActor.run(body: { failingFollower.failures.isEmpty }) { try await Task.sleep(for: .milliseconds(20)) }
                }
                for (_, _, follower) in queries { await follower.stop() }
            }
        }
    }
}

/// A request made from values keeps them for batches; bindings set by hand afterwards drop them.
@Suite struct PostgresRequestValuesTests {
    @Test("values bind as the request's arguments; setting the arguments by hand forgets the values")
    func valuesAndBindings() {
        var request = PostgresLiveQueryRequest(sql: "SELECT id FROM t WHERE a = $1 AND b = $2", values: [.integer(1), .text("x")], as: Int64.self)
        #expect(request.argumentValues == [.integer(1), .text("x")] && request.arguments.count == 2)
        request.arguments = PostgresBindings()
        #expect(request.argumentValues == nil)
    }
}

/// The batch statement, written from a query's re-read.
@Suite struct RereadBatchTests {
    @Test("parameters become the batch row's columns; strings, comments and other dollars stay")
    func template() throws {
        let sql = "SELECT a FROM t WHERE b = $1 AND c = '$2' /* $1 */ AND d = $2 AND e = ANY(CAST($3 AS text[])) AND f = $$x$1$$"
        let template = try #require(RereadBatch.template(sql, arguments: 2))
        #expect(template == "SELECT a FROM t WHERE b = livelist_b.a1 AND c = '$2' /* $1 */ AND d = livelist_b.a2 AND e = ANY(CAST(livelist_b.ids AS text[])) AND f = $$x$1$$")
        #expect(RereadBatch.template("SELECT $4", arguments: 2) == nil)
        #expect(RereadBatch.sql(template: "T", argumentTypes: ["int8"], rows: 2)
            == "SELECT livelist_b.n, livelist_r.* FROM (VALUES (0, CAST($1 AS int8), CAST($2 AS text[])), (1, CAST($3 AS int8), CAST($4 AS text[])))"
            + " AS livelist_b(n, a1, ids) CROSS JOIN LATERAL (T) AS livelist_r")
        #expect([1, 2, 3, 4, 5, 9].map(RereadBatch.rows(for:)) == [1, 2, 4, 4, 8, 16])
        #expect([0, 1, 127, 128, 1_000, 40_000].map(RereadBatch.maximumRows(arguments:)) == [256, 256, 256, 128, 32, 1])
        #expect(RereadBatch.kinds(of: [.integer(1), .text("a"), .real(1), .blob([1])]) == "itrb")
        #expect(RereadBatch.kinds(of: [.integer(1), .null]) == nil)
    }
}
