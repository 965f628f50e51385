import Foundation
import ListDiff
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// Requests at the edges: a text key under a collation that is not byte order, a trailing
    /// semicolon, a NULL argument, a generated column, and a first screen's positions.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresRequestEdgeTests {
        @Test("a text primary key under an ICU collation breaks ties by bytes on the server too: the list stays the SELECT's through inserts and deletes")
        func textKeyTies() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE tag (id text COLLATE "und-x-icu" PRIMARY KEY, label text COLLATE "C")
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: "SELECT id, label FROM tag ORDER BY label", as: String.self),
                                                             in: database)
                #expect(query.mode == .incremental)
                for (step, id) in ["a", "B", "c", "Ä", "b", "A", "é", "E", "_x"].enumerated() {
                    try await PG.execute(writer, "INSERT INTO tag VALUES ('\(id)', '\(step % 2)')")
                    if step % 4 == 3 { try await PG.execute(writer, "DELETE FROM tag WHERE id = 'c'") }
                    let result = try await query.upToDate()
                    let expected = try await PG.strings(writer, "SELECT id FROM tag ORDER BY label, id COLLATE \"C\"")
                    #expect(PG.ids(result) == expected, "after \(id)")
                }
            }
        }

        @Test("a SELECT ending in a semicolon, a NULL argument, and a generated column: each followed row by row, values read")
        func requestEdges() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C", owner text, doubled integer GENERATED ALWAYS AS (id * 2) STORED);
                INSERT INTO item (id, name, owner) SELECT g, 'n' || g, CASE WHEN g % 2 = 0 THEN 'x' END FROM generate_series(1, 10) g
                """) { _, writer, database in
                var arguments = PostgresBindings()
                arguments.appendNull()
                let request = PostgresLiveQueryRequest(sql: "SELECT id, name, doubled FROM item WHERE owner IS NOT DISTINCT FROM $1 ORDER BY name;\n -- the end\n",
                                                       arguments: arguments, as: Int64.self)
                let query = try await PostgresLiveQuery.open(request, in: database)
                #expect(query.mode == .incremental)
                try await PG.execute(writer, "UPDATE item SET name = 'a' WHERE id = 5")
                let result = try await query.upToDate()
                #expect(PG.ids(result) == [5, 1, 3, 7, 9])
                #expect(query.statistics.refetches == 0, "a generated column is not a schema change")
                let values = try await query.values(of: result.rows(in: 0..<result.count))
                #expect(values[5] == [.integer(5), .text("a"), .integer(10)])
                #expect(values.count == 5)
            }
        }

        @Test("a first screen is at no position; the whole result that completes it is")
        func firstScreenPositions() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C");
                INSERT INTO item SELECT g, md5(g::text) FROM generate_series(1, 3000) g
                """) { _, _, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: "SELECT id FROM item ORDER BY name", as: Int64.self),
                                                             in: database, firstScreenRows: 10)
                #expect(!query.initialResult.isComplete)
                #expect(query.position(of: query.initialResult) == nil)
                #expect(!query.holds(query.initialResult, at: query.version))
                let whole = try await query.upToDate()
                #expect(whole.isComplete && whole.count == 3000)
                #expect(query.position(of: whole) != nil && query.holds(whole, at: query.version))
            }
        }
    }
}
