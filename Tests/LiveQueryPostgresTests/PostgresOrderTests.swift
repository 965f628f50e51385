import Foundation
import ListTesting
import LiveListWire
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import Testing

extension PostgresDatabaseTests {
    /// The order a PostgreSQL query states on its columns (what a server sends clients as the
    /// list's order): each list, compared by it, is in the query's order after every commit; a
    /// query whose order a client could not reproduce states none.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresOrderTests {
        static func wire(_ value: SQLValue) -> WireValue {
            switch value {
            case .null: .null
            case let .integer(number): .integer(number)
            case let .real(number): .real(number)
            case let .text(text): .text(text.string)
            case let .blob(bytes): .blob(bytes)
            }
        }

        static func wireOrder(_ order: ResultOrder) -> WireOrder {
            WireOrder(terms: order.terms.map { WireOrderTerm(column: $0.column, descending: $0.descending, nullsFirst: $0.nullsFirst) })
        }

        @Test("stated orders sort every list as PostgreSQL does; types sent as text, `*` and refetched queries state none")
        func statedOrder() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                let stated = [
                    PostgresSQLTests.joined.replacingOccurrences(of: ", m.received, m.meta, m.score", with: "") + " ORDER BY sender NULLS FIRST, m.subject DESC",
                    "SELECT id, name, company_id FROM contact ORDER BY company_id DESC, name",
                ]
                let unstated = [
                    "SELECT id, subject, received FROM message ORDER BY received",   // a time: sent as text
                    "SELECT id, subject, score FROM message ORDER BY score, id",     // a numeric: sent as text
                    "SELECT * FROM contact ORDER BY name",
                    "SELECT id, name FROM contact ORDER BY company_id",              // not one of the columns
                    "SELECT id, subject FROM message ORDER BY subject LIMIT 5",      // refetched
                ]
                var queries: [(String, PostgresLiveQuery<Int64>)] = []
                for sql in stated + unstated {
                    queries.append((sql, try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, identity: "id", as: Int64.self), in: database)))
                }
                for (sql, query) in queries where unstated.contains(sql) {
                    #expect(query.order == nil, "\(sql) states \(String(describing: query.order))")
                }
                var random = SeededRandomNumberGenerator(seed: 0x0D_2027)
                for step in 0..<12 {
                    try await PostgresSQLTests.randomTransaction(writer, &random)
                    for (sql, query) in queries where stated.contains(sql) {
                        let order = try #require(query.order.map(Self.wireOrder), "\(sql) states no order")
                        let result = try await query.upToDate()
                        let rows = result.rows(in: 0..<result.count)
                        let values = try await query.values(of: rows)
                        let listed = rows.compactMap { row in values[row.id].map { (id: WireValue.integer(row.id), values: $0.map(Self.wire)) } }
                        #expect(listed.count == rows.count)
                        for index in listed.indices.dropLast() {
                            #expect(order.compare(listed[index], listed[index + 1]) < 0, "step \(step), \(sql): \(listed[index]) before \(listed[index + 1])")
                        }
                    }
                }
            }
        }
    }
}
