import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import Testing

extension PostgresDatabaseTests {
    /// Identities over PostgreSQL as over SQLite: any NOT NULL column with a unique index on it
    /// alone identifies rows — a uuid, a text, an integer that is not the primary key — followed
    /// row by row, its changes still found by the primary key; and a refused identity says what to
    /// change.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresIdentityTests {
        static let schema = """
            CREATE TABLE album (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL);
            CREATE TABLE track (
                id bigint PRIMARY KEY, uuid uuid NOT NULL UNIQUE, code text COLLATE "C" NOT NULL, number bigint NOT NULL,
                title text COLLATE "C" NOT NULL, album bigint NOT NULL REFERENCES album (id), loose uuid UNIQUE, label text
            );
            CREATE UNIQUE INDEX track_code ON track (code);
            CREATE UNIQUE INDEX track_number ON track (number);
            CREATE UNIQUE INDEX track_label ON track (label) WHERE label IS NOT NULL;
            INSERT INTO album VALUES (1, 'b'), (2, 'a'), (3, 'c')
            """

        /// The query's result once it holds every commit made so far, within 30 seconds.
        static func upToDate<ID>(_ query: PostgresLiveQuery<ID>, _ step: String) async throws -> LiveResult<ID> {
            let wait = Task { try await query.upToDate() }
            try await within("\(step): upToDate") { _ = try await wait.value }
            return try await wait.value
        }

        /// One random write to the tracks: an insert, a new title, a new identity, a delete, or an album renamed.
        static func randomWrite(_ writer: PostgresConnection, _ random: inout SeededRandomNumberGenerator, next: inout Int64) async throws {
            func roll(_ count: Int) -> Int { Int(random.next(upperBound: UInt64(count))) }
            let existing = try await PG.int64s(writer, "SELECT id FROM track ORDER BY id")
            let title = "t\(roll(8))", album = 1 + roll(3), kind = roll(6)
            guard !existing.isEmpty, kind != 0 else {
                next += 1
                try await PG.execute(writer, """
                    INSERT INTO track VALUES (\(next), '\(UUID().uuidString)', 'c\(next)', \(1_000 - next), '\(title)', \(album), NULL, NULL)
                    """)
                return
            }
            let id = existing[roll(existing.count)]
            switch kind {
            case 1, 2:
                try await PG.execute(writer, "UPDATE track SET title = '\(title)', album = \(album) WHERE id = \(id)")
            case 3:
                // The identities themselves change: the same row of the table, another row of the list.
                next += 1
                try await PG.execute(writer, "UPDATE track SET uuid = '\(UUID().uuidString)', code = 'c\(next)', number = \(1_000 - next) WHERE id = \(id)")
            case 4:
                try await PG.execute(writer, "DELETE FROM track WHERE id = \(id)")
            default:
                try await PG.execute(writer, "UPDATE album SET name = '\(["a", "b", "c", "d"][roll(4)])' WHERE id = \(album)")
            }
        }

        @Test("a uuid, a text or an integer column with a unique index identifies the rows of a joined query, row by row, through every kind of write",
              arguments: ["uuid", "code", "number"])
        func uniqueColumnIdentifies(column: String) async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema) { _, writer, database in
                let sql = "SELECT t.\(column), t.title, a.name FROM track t JOIN album a ON a.id = t.album ORDER BY a.name, t.title"
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "t.\(column)", as: SQLValue.self), in: database)
                #expect(query.mode == .incremental)
                var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("postgres unique identity \(column)"))
                var next: Int64 = 0
                for step in 0..<60 {
                    try await Self.randomWrite(writer, &random, next: &next)
                    let result = try await Self.upToDate(query, "step \(step)")
                    // Ties broken by the identity, compared as PostgreSQL compares it.
                    let expected = try await PG.strings(writer, "SELECT t.\(column)::text FROM track t JOIN album a ON a.id = t.album ORDER BY a.name, t.title, t.\(column)")
                    #expect(PG.ids(result).map(Self.text(of:)) == expected, "step \(step)")
                }
                #expect(query.statistics.refetches == 0, "every change followed by the primary key, none refetched")
            }
        }

        static func text(of value: SQLValue) -> String {
            switch value {
            case let .integer(integer): String(integer)
            case let .text(text): text.string
            default: value.description
            }
        }

        @Test("a UUID identity that is not the primary key, named in a table request: its rows and their values, as a list reads them")
        func uuidTableRequest() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema + """
                ;
                INSERT INTO track SELECT g, gen_random_uuid(), 'c' || g, g, 't' || (g % 7), 1 + g % 3, NULL, NULL FROM generate_series(1, 40) g
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(
                    PostgresLiveQueryRequest(table: "track", identity: "uuid", as: UUID.self, sort: [SortTerm("title"), SortTerm("number")]), in: database)
                #expect(query.mode == .incremental)
                try await PG.execute(writer, "DELETE FROM track WHERE id % 5 = 0")
                try await PG.execute(writer, "UPDATE track SET title = 'a' WHERE id % 7 = 1")
                try await PG.execute(writer, "UPDATE track SET uuid = gen_random_uuid() WHERE id % 11 = 2")
                let result = try await Self.upToDate(query, "after the writes")
                let expected = try await PG.strings(writer, "SELECT uuid::text FROM track ORDER BY title, number, uuid")
                #expect(PG.ids(result).map { $0.uuidString.lowercased() } == expected)
                // Rows read by their UUID, as a list's page is.
                let rows = result.rows(in: 0..<result.count)
                let read = Task { try await query.values(of: Array(rows)) }
                try await within("values of the rows") { _ = try await read.value }
                let values = try await read.value
                #expect(values.count == rows.count)
                let uuidColumn = try #require(query.columnNames.firstIndex(of: "uuid"))
                #expect(rows.allSatisfy { values[$0.id]?[uuidColumn] == .text(SQLText($0.id.uuidString.lowercased())) })
                #expect(query.statistics.refetches == 0)
            }
        }

        @Test("an identity that cannot identify rows is refused, saying what to change; a refetched query's names its result's columns")
        func refusalsSayWhatToChange() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema + """
                ;
                CREATE TABLE keyless (uuid uuid NOT NULL UNIQUE, name text);
                INSERT INTO keyless VALUES (gen_random_uuid(), 'x')
                """) { _, writer, database in
                func refusal<ID>(_ request: PostgresLiveQueryRequest<ID>) async -> String {
                    do {
                        _ = try await PostgresLiveQuery.open(request, in: database)
                        return "opened"
                    } catch {
                        return "\(error)"
                    }
                }
                let nullable = await refusal(PostgresLiveQueryRequest(table: "track", identity: "loose", as: UUID.self))
                #expect(nullable.contains("loose cannot identify the rows of track") && nullable.contains("ALTER COLUMN \"loose\" SET NOT NULL")
                        && !nullable.contains("CREATE UNIQUE INDEX") && nullable.contains("or name its primary key id"), "\(nullable)")
                let partial = await refusal(PostgresLiveQueryRequest(sql: "SELECT t.label FROM track t", identity: "t.label", as: String.self))
                #expect(partial.contains("CREATE UNIQUE INDEX ON \"public\".\"track\" (\"label\")"), "a partial index is not unique in every row: \(partial)")
                let notUnique = await refusal(PostgresLiveQueryRequest(sql: "SELECT t.title FROM track t", identity: "t.title", as: String.self))
                #expect(notUnique.contains("CREATE UNIQUE INDEX") && notUnique.contains("or name \"t\".\"id\", its primary key"), "\(notUnique)")
                let joined = await refusal(PostgresLiveQueryRequest(sql: "SELECT a.id, t.title FROM track t JOIN album a ON a.id = t.album",
                                                                    identity: "a.id", as: Int64.self))
                #expect(joined.contains("joined table \"public\".\"album\""), "\(joined)")
                let missing = await refusal(PostgresLiveQueryRequest(sql: "SELECT t.uuid AS track, count(*) FROM track t GROUP BY t.uuid, t.title",
                                                                     identity: "id", as: SQLValue.self))
                #expect(missing.contains("the query is refetched (GROUP BY") && missing.contains("none of its columns (track, count) is named id"),
                        "\(missing)")
                let twice = await refusal(PostgresLiveQueryRequest(sql: "SELECT * FROM track t JOIN album a ON a.id = t.album LIMIT 5",
                                                                   identity: "id", as: Int64.self))
                #expect(twice.contains("2 of its columns are named id"), "\(twice)")
                // A table whose changes name no single-column key: refetched, identified by the column named.
                let keyless = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "keyless", identity: "uuid", as: UUID.self), in: database)
                guard case .refetch = keyless.mode else {
                    Issue.record("a table without a single-column primary key is followed row by row: \(keyless.mode)")
                    return
                }
                try await PG.execute(writer, "INSERT INTO keyless VALUES (gen_random_uuid(), 'y')")
                #expect(try await Self.upToDate(keyless, "keyless").count == 2)
            }
        }
    }
}
