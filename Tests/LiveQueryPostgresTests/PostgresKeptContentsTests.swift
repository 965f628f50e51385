import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import Testing

extension PostgresDatabaseTests {
    /// The rows a query reads to follow a commit (a refetch, a round's re-reads) carry the
    /// SELECT's columns when every column is of a type sent as is: their contents are served from
    /// there, not read again, and equal what a read of them gives.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresKeptContentsTests {
        static let schema = """
            CREATE TABLE note (id bigint PRIMARY KEY, title text COLLATE "C" NOT NULL, score double precision, amount numeric,
                               body bytea, flag boolean, revision integer NOT NULL DEFAULT 0, at timestamptz NOT NULL DEFAULT now());
            INSERT INTO note (id, title, score, amount, body, flag)
            SELECT g, 't' || g, g / 4.0, g / 3.0, decode(lpad(to_hex(g), 2, '0'), 'hex'), g % 2 = 0 FROM generate_series(1, 40) g;
            """

        static let titles = ["Zoë", "Zoe\u{308}", "É", "E\u{301}", "", "😀", "ß", "a b", "A"]

        /// As PostgreSQL writes a value as text (a whole double without its ".0").
        static func text(_ value: SQLValue) -> String? {
            if case let .real(number) = value, number == number.rounded(), abs(number) < 1e15 { return String(Int64(number)) }
            return PostgresSQLTests.text(value)
        }

        struct Followed {
            let sql: String
            let columns: Int
            /// Whether its reads carry its columns (no timestamptz among them).
            let keeps: Bool
        }

        static let followed = [
            Followed(sql: "SELECT id, title, score, amount, body FROM note WHERE score > 1 ORDER BY title, id", columns: 5, keeps: true),
            Followed(sql: "SELECT id, title, revision FROM note ORDER BY revision DESC, id LIMIT 7", columns: 3, keeps: true),
            Followed(sql: "SELECT id, title, at FROM note ORDER BY title, id", columns: 3, keeps: false),
        ]

        @Test("rows read to follow a commit give their contents without another read, equal to the SELECT's")
        func keptContents() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema) { _, writer, database in
                try await PG.execute(writer, "SET TimeZone = 'UTC'")
                var queries: [(Followed, PostgresLiveQuery<Int64>)] = []
                for followed in Self.followed {
                    queries.append((followed, try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: followed.sql, identity: "id", as: Int64.self), in: database)))
                }
                #expect(queries[1].1.mode != .incremental, "LIMIT is refetched")
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL kept contents")
                var random = SeededRandomNumberGenerator(seed: seed)
                var before = queries.map { $0.1.latestResult }
                var served = [0, 0, 0]
                for step in 0..<30 {
                    let id = Int.random(in: 1...45, using: &random)
                    let title = PostgresSQLTests.quoted(Self.titles[Int.random(in: 0..<Self.titles.count, using: &random)])
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0:
                        try await PG.execute(writer, """
                            INSERT INTO note (id, title, score, amount, body, flag) VALUES (\(id), \(title), \(id).25, \(id).125, '\\x00ff', NULL)
                            ON CONFLICT (id) DO UPDATE SET title = excluded.title, revision = note.revision + 1
                            """)
                    case 1: try await PG.execute(writer, "DELETE FROM note WHERE id = \(id)")
                    default:
                        try await PG.execute(writer, """
                            UPDATE note SET title = \(title), score = score + 1, amount = amount * 2, revision = revision + 1, at = now() WHERE id = \(id)
                            """)
                    }
                    for (index, (followed, query)) in queries.enumerated() {
                        let result = try await query.upToDate()
                        let rows = result.rows(in: 0..<result.count)
                        let earlier = Dictionary(before[index].rows(in: 0..<before[index].count).map { ($0.id, $0.version) }, uniquingKeysWith: { a, _ in a })
                        let changed = rows.filter { earlier[$0.id] != $0.version }
                        let (kept, missing) = query.runner.keptContents(of: changed)
                        if followed.keeps {
                            // Work counted: the rows this commit changed need no read of their contents.
                            #expect(missing.isEmpty, "step \(step), seed \(seed): \(followed.sql) read \(missing.map(\.id)) again")
                            served[index] += kept.count
                        } else {
                            #expect(kept.isEmpty, "step \(step): \(followed.sql) has a column sent as text")
                        }
                        // Kept contents equal a read of the same rows at the same tokens.
                        let session = try await database.engine.contents.open()
                        let read = try await query.runner.payloads(of: changed, session)
                        for (id, values) in kept {
                            #expect(read[id] == values, "step \(step), seed \(seed): row \(id) of \(followed.sql)")
                        }
                        // And the list's values equal the SELECT's, byte for byte.
                        let expected = try await PostgresSQLTests.expectedRows(writer, followed.sql, columns: followed.columns)
                        let values = try await query.values(of: rows)
                        let shown = rows.map { row in values[row.id].map { $0.map(Self.text) } }
                        #expect(shown == expected.map { Optional($0) }, "step \(step), seed \(seed): \(followed.sql)")
                        before[index] = result
                    }
                }
                #expect(served[0] > 0 && served[1] > 0, "contents served from reads: \(served)")
            }
        }
    }
}
