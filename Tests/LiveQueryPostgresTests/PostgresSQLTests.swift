import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// SQL requests: many-to-one joins followed row by row, every other shape refetched with its
    /// reason, and each list — identities, order, sections and the values of its columns — equal to
    /// the SELECT after every commit to any of its tables.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresSQLTests {
        static let schema = """
            CREATE TABLE company (id bigint PRIMARY KEY, name text COLLATE "C");
            CREATE TABLE contact (id bigint PRIMARY KEY, name text COLLATE "C", company_id bigint);
            CREATE TABLE message (id bigint PRIMARY KEY, contact_id bigint, subject text COLLATE "C", received timestamptz,
                                  revision integer NOT NULL DEFAULT 0, meta jsonb, score numeric);
            CREATE INDEX ON message (contact_id);
            CREATE INDEX ON contact (company_id);
            INSERT INTO company SELECT g, 'co' || (g % 3) FROM generate_series(1, 4) g;
            INSERT INTO contact SELECT g, 'n' || (g % 5), 1 + g % 5 FROM generate_series(1, 8) g;
            INSERT INTO message SELECT g, 1 + g % 9, 's' || (g % 4), '2026-01-01'::timestamptz + g * interval '1 hour', 0, '{"k": 1}', g / 3.0
            FROM generate_series(1, 30) g;
            """

        static let names = ["Zoë", "Zoe\u{308}", "a", "A", "", "😀", "ß", "Blocked", "spam", "E\u{301}", "É"]

        static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

        /// One random transaction over the three tables: inserts, updates (keys too), deletes; a quarter roll back.
        static func randomTransaction(_ writer: PostgresConnection, _ random: inout some RandomNumberGenerator) async throws {
            func name() -> String { quoted(names[Int.random(in: 0..<names.count, using: &random)]) }
            var statements: [String] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let id = Int.random(in: 1...12, using: &random)
                switch Int.random(in: 0..<12, using: &random) {
                case 0: statements.append("INSERT INTO company VALUES (\(id), \(name())) ON CONFLICT (id) DO UPDATE SET name = excluded.name")
                case 1: statements.append("UPDATE company SET name = \(name()) WHERE id = \(id)")
                case 2: statements.append("DELETE FROM company WHERE id = \(id)")
                case 3: statements.append("INSERT INTO contact VALUES (\(id), \(name()), \(Int.random(in: 1...6, using: &random))) ON CONFLICT (id) DO UPDATE SET name = excluded.name")
                case 4: statements.append("UPDATE contact SET name = \(name()), company_id = \(Int.random(in: 1...6, using: &random)) WHERE id = \(id)")
                case 5: statements.append("UPDATE contact SET id = \(id + 20) WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM contact WHERE id = \(id + 20))")
                case 6: statements.append("DELETE FROM contact WHERE id = \(id)")
                case 7, 8: statements.append("""
                    INSERT INTO message VALUES (\(id + 30), \(Int.random(in: 1...10, using: &random)), \(name()), now(), 0, '{"n": \(id)}', \(id).50)
                    ON CONFLICT (id) DO UPDATE SET subject = excluded.subject, revision = message.revision + 1
                    """)
                case 9: statements.append("UPDATE message SET contact_id = \(Int.random(in: 1...10, using: &random)), revision = revision + 1 WHERE id % 7 = \(id % 7)")
                case 10: statements.append("UPDATE message SET id = id + 100 WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM message WHERE id = \(id + 100))")
                default: statements.append("DELETE FROM message WHERE id = \(id)")
                }
            }
            let rollback = Int.random(in: 0..<4, using: &random) == 0
            try await PG.execute(writer, "BEGIN")
            for statement in statements { try await PG.execute(writer, statement) }
            try await PG.execute(writer, rollback ? "ROLLBACK" : "COMMIT")
        }

        /// The query's rows as text, from the server: what the list's values must equal.
        static func expectedRows(_ writer: PostgresConnection, _ sql: String, columns: Int) async throws -> [[String?]] {
            let select = "SELECT " + (0..<columns).map { "q.c\($0)::text" }.joined(separator: ", ")
                + " FROM (" + sql + ") AS q(" + (0..<columns).map { "c\($0)" }.joined(separator: ", ") + ")"
            var rows: [[String?]] = []
            for try await row in try await writer.query(PostgresQuery(unsafeSQL: select), logger: PG.logger) {
                rows.append(row.map { $0.bytes.map { String(buffer: $0) } })
            }
            return rows
        }

        static func text(_ value: SQLValue) -> String? {
            switch value {
            case .null: nil
            case let .integer(number): String(number)
            case let .text(text): text.string
            case let .real(number): String(number)
            case let .blob(bytes): "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
            }
        }

        /// After `query.upToDate()`: its ids and every value equal `sql`'s rows, and the strict view
        /// following it took every changeset.
        static func expectEqualsSelect(_ query: PostgresLiveQuery<Int64>, _ sql: String, columns: Int, _ follower: PostgresListFollower<Int64>,
                                       _ writer: PostgresConnection, _ context: String) async throws {
            let result = try await query.upToDate()
            let expected = try await expectedRows(writer, sql, columns: columns)
            #expect(PG.ids(result).map(String.init) == expected.map { $0[0] ?? "" }, "\(context), \(query.statistics)")
            let values = try await query.values(of: result.rows(in: 0..<result.count))
            let shown = result.rows(in: 0..<result.count).map { row in values[row.id].map { $0.map(text) } }
            #expect(shown == expected.map { Optional($0) }, "values, \(context)")
            await follower.waitFor(result)
            await MainActor.run { #expect(follower.view.violations.isEmpty, "\(context)") }
        }

        static let joined = """
            SELECT m.id, m.subject, c.name AS sender, co.name AS company, m.received, m.meta, m.score
            FROM message m JOIN contact c ON c.id = m.contact_id LEFT JOIN company co ON co.id = c.company_id
            WHERE m.subject <> 'spam' AND (co.name IS NULL OR co.name <> 'Blocked')
            """

        @Test("joined SELECTs are followed row by row: ids, order, sections and values equal the SELECT after every commit to any table")
        func joinOracle() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema) { _, writer, database in
                try await PG.execute(writer, "SET TimeZone = 'UTC'")
                let requests: [(String, String?)] = [
                    (Self.joined + " ORDER BY c.name, m.received DESC", "c.name"),
                    (Self.joined + " ORDER BY co.name NULLS FIRST, m.subject DESC", nil),
                    (Self.joined + " ORDER BY m.score DESC, sender", nil),
                ]
                var queries: [(String, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for (sql, section) in requests {
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, as: Int64.self, section: section), in: database)
                    #expect(query.mode == .incremental, "\(sql)")
                    #expect(query.columnNames == ["id", "subject", "sender", "company", "received", "meta", "score"])
                    queries.append((sql, query, await PostgresListFollower(query)))
                }
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL join oracle")
                var random = SeededRandomNumberGenerator(seed: seed)
                for step in 0..<50 {
                    try await Self.randomTransaction(writer, &random)
                    for (sql, query, follower) in queries {
                        // The list breaks ties by the identity, as the SELECT must to be compared with it.
                        try await Self.expectEqualsSelect(query, sql + ", m.id", columns: 7, follower, writer,
                                                          "step \(step): \(sql), seed \(seed), \(await database.engine.diagnostics)")
                    }
                }
                let sectioned = queries[0].1.latestResult
                let expectedSections = try await PG.strings(writer, "SELECT coalesce(sender, '<null>') FROM (\(Self.joined)) q GROUP BY sender ORDER BY sender")
                #expect(sectioned.sectionCount == expectedSections.count)
                for (sql, query, follower) in queries {
                    #expect(query.statistics.refetches <= 2, "\(sql): joined rows' changes re-read the rows that meet them")
                    await MainActor.run { #expect(follower.failures.isEmpty) }
                    await follower.stop()
                }
            }
        }

        @Test("every shape that cannot be followed row by row refetches with its reason, and equals the SELECT", arguments: [
            ("SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id GROUP BY c.id, c.name HAVING count(m.id) > 0 ORDER BY n DESC, c.id",
             RefetchReason.Shape.having),
            ("SELECT id, subject FROM message ORDER BY received DESC, id LIMIT 5", .limit),
            ("SELECT id, name FROM contact ORDER BY 2, id", .orderByExpression("2")),
            ("SELECT m.id, m.subject FROM message m WHERE m.id IN (SELECT max(id) FROM message GROUP BY contact_id) ORDER BY m.id",
             .readsOwnTable("\"public\".\"message\"")),
            ("SELECT id, name FROM contact ORDER BY name COLLATE \"und-x-icu\", id", .customCollation("und-x-icu (und)")),
            ("SELECT m.id FROM message m WHERE m.received > now() - interval '1 year' ORDER BY m.id", .currentTime),
            ("SELECT id, random() AS r FROM contact ORDER BY id", .nondeterministicFunctions(["random"])),
        ])
        func refetchedShapes(sql: String, shape: RefetchReason.Shape) async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)
                guard case let .refetch(.request(shapes)) = query.mode else {
                    Issue.record("\(sql) is \(query.mode)")
                    return
                }
                #expect(shapes.contains(shape), "\(sql): \(shapes)")
                var random = SeededRandomNumberGenerator(seed: 7)
                for step in 0..<12 {
                    try await Self.randomTransaction(writer, &random)
                    let result = try await query.upToDate()
                    if case .nondeterministicFunctions = shape { continue }
                    let expected = try await Self.expectedRows(writer, sql, columns: 1).map { $0[0] ?? "" }
                    #expect(PG.ids(result).map(String.init) == expected, "step \(step): \(sql)")
                }
            }
        }

        @Test("explain says how a request is followed, and what index a join lookup lacks; mistakes are typed errors")
        func explainAndErrors() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema + ";\nDROP INDEX contact_company_id_idx") { _, _, database in
                let explanation = try await PostgresLiveQuery.explain(PostgresLiveQueryRequest(sql: Self.joined + " ORDER BY c.name", as: Int64.self), in: database)
                #expect(explanation.path == .incremental)
                #expect(explanation.notes.count == 1 && explanation.notes[0].contains("\"contact\".\"company_id\" has no index"))
                let grouped = try await PostgresLiveQuery.explain(
                    PostgresLiveQueryRequest(sql: "SELECT contact_id AS id, count(*) FROM message GROUP BY contact_id", as: Int64.self), in: database)
                #expect(grouped.path == .refetch(reason: .request([.groupBy, .aggregate("count")])))

                func fails(_ request: PostgresLiveQueryRequest<Int64>, _ check: (PostgresLiveQueryError) -> Bool) async {
                    do {
                        _ = try await PostgresLiveQuery.open(request, in: database)
                        Issue.record("\(request) opened")
                    } catch {
                        #expect(check(error), "\(request): \(error)")
                    }
                }
                await fails(PostgresLiveQueryRequest(sql: Self.joined, identity: "m.subject", as: Int64.self)) {
                    if case .identityNotUnique = $0 { return true } else { return false }
                }
                await fails(PostgresLiveQueryRequest(sql: Self.joined + " ORDER BY c.name", as: Int64.self, section: "m.subject")) {
                    if case .sectionNotFirstSortTerm("m.subject") = $0 { return true } else { return false }
                }
                await fails(PostgresLiveQueryRequest(sql: "SELECT contact_id, count(*) FROM message GROUP BY contact_id", as: Int64.self)) {
                    if case .identityNotInResult = $0 { return true } else { return false }
                }
                await fails(PostgresLiveQueryRequest(sql: "SELECT m.id FROM message m JOIN nowhere n ON n.id = m.id", as: Int64.self)) {
                    $0.sqlState == "42P01"   // undefined_table, as the server says
                }
                await fails(PostgresLiveQueryRequest(sql: "SELECT m.id FROM message m WHERE m.nope = 1", as: Int64.self)) { $0.sqlState == "42703" }
                await fails(PostgresLiveQueryRequest(sql: "SELECT id FROM message WHERE", as: Int64.self)) { $0.sqlState == "42601" }
                await fails(PostgresLiveQueryRequest(sql: "SELECT id FROM message WHERE id = $1", as: Int64.self)) { $0.sqlState != nil }
            }
        }
    }
}
