import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
@testable import LiveQueryCore
import Logging
import Testing

/// The order a `reset` states (`order`): with it a client compares rows exactly as the server
/// orders them — every list sent, sorted by it, is in the server's order, over hostile values:
/// every storage class in one column, both normalization forms, NOCASE, RTRIM, NULLs first and
/// last, a LEFT JOIN, sections. Queries whose order the server cannot state send none.
@Suite("The list's order", .serialized, .timeLimit(.minutes(2)))
struct ListOrderTests {
    static let queries = [
        PublishedQuery(name: "mixed", sql: "SELECT id, name FROM item ORDER BY name DESC NULLS LAST"),
        PublishedQuery(name: "nocase", sql: "SELECT id, code, score FROM item ORDER BY code, score DESC"),
        PublishedQuery(name: "joined", sql: """
            SELECT i.id, o.label AS owner, i.tag FROM item i LEFT JOIN owner o ON o.id = i.owner_id ORDER BY owner NULLS FIRST, i.tag COLLATE RTRIM
            """),
        PublishedQuery(name: "sections", sql: "SELECT id, grp, name FROM item ORDER BY grp DESC, name", section: "grp"),
        PublishedQuery(name: "aliased", sql: "SELECT id, score AS points FROM item ORDER BY points, id"),
        // A scalar subquery names its inner column as its origin: the order is stated on i.name.
        PublishedQuery(name: "pinned", sql: """
            SELECT (SELECT i.name FROM owner WHERE owner.id = i.owner_id AND owner.label = 'a') AS p, i.id, i.name FROM item i ORDER BY i.name
            """),
        PublishedQuery(name: "starred", sql: "SELECT * FROM item ORDER BY code DESC, tag"),
        // No stated order: an expression, a term that is not one of the SELECT's columns, and an
        // alias that shadows a column (SQLite orders by the alias's expression: refetched).
        PublishedQuery(name: "expression", sql: "SELECT id, name FROM item ORDER BY lower(name)"),
        PublishedQuery(name: "unselected", sql: "SELECT id FROM item ORDER BY score"),
        PublishedQuery(name: "shadow", sql: "SELECT id, upper(code) AS code FROM item ORDER BY code"),
        PublishedQuery(name: "shadowed", sql: "SELECT id, (SELECT label FROM owner WHERE owner.id = item.owner_id) AS name FROM item ORDER BY name"),
    ]
    static let stated: Set = ["mixed", "nocase", "joined", "sections", "aliased", "pinned", "starred"]
    /// Refetched: in SQLite's own order, ties included.
    static let asWritten: Set = ["expression", "shadow", "shadowed"]

    static let texts = ["é", "e\u{301}", "E", "e", "Zoë", "Zoe\u{308}", "a", "A", "_", "", " ", "a ", "a  ", "😀", "\u{FFFD}", "\u{E000}",
                        "a\0b", "a\0c", "A\0", "a\0", "b\0", "a\u{1}", "a\0é", "a\0xy", "ß"]

    static func value(_ random: inout SeededRandomNumberGenerator) -> DatabaseValue {
        switch random.next(upTo: 7) {
        case 0: return .null
        case 1: return (Int64.random(in: -3...3, using: &random)).databaseValue
        case 2: return [Int64.max, Int64.min, 9_007_199_254_740_993, -9_007_199_254_740_993][random.next(upTo: 4)].databaseValue
        case 3: return [0.5, -0.0, 2.0, 9_007_199_254_740_992.0, -1e300, 1e-300, Double.infinity][random.next(upTo: 7)].databaseValue
        case 4: return Data([UInt8](repeating: UInt8(random.next(upTo: 3)), count: random.next(upTo: 3))).databaseValue
        default: return texts[random.next(upTo: texts.count)].databaseValue
        }
    }

    static func fill(_ db: Database, _ random: inout SeededRandomNumberGenerator, rows: Int) throws {
        for id in 1...rows {
            let text = texts[random.next(upTo: texts.count)]
            let name = value(&random)
            let code: String? = random.next(upTo: 5) == 0 ? nil : text.uppercased()
            let score = value(&random)
            let tag = texts[random.next(upTo: texts.count)] + String(repeating: " ", count: random.next(upTo: 3))
            let group: Int? = random.next(upTo: 4) == 0 ? nil : random.next(upTo: 3)
            let owner: Int? = random.next(upTo: 3) == 0 ? nil : random.next(upTo: 6)
            try db.execute(sql: "INSERT INTO item (id, name, code, score, tag, grp, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           arguments: [id, name, code, score, tag, group, owner])
        }
    }

    @Test("every list sorted by its stated order is the server's list; queries it cannot state send none")
    func statedOrder() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("list order")
        var random = SeededRandomNumberGenerator(seed: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-order-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: directory.appendingPathComponent("order.sqlite").path)
        try await pool.write { [random] db in
            var random = random
            try db.execute(sql: """
                CREATE TABLE owner (id INTEGER PRIMARY KEY, label TEXT);
                CREATE TABLE item (id INTEGER PRIMARY KEY, name, code TEXT COLLATE NOCASE, score, tag TEXT, grp INTEGER, owner_id INTEGER);
                """)
            for id in 0..<6 { try db.execute(sql: "INSERT INTO owner VALUES (?, ?)", arguments: [id, id == 3 ? nil : Self.texts[id]]) }
            try Self.fill(db, &random, rows: 150)
        }
        let (_, port, group, running) = try await WireFixture.serveBelowEphemeralPorts {
            LiveListServer(database: pool, queries: Self.queries, logger: Logger(label: "test.server"))
        }
        let wire = try await MutationTests.Wire("ws://127.0.0.1:\(port)/live")
        for (sub, query) in Self.queries.enumerated() {
            wire.send(.subscribe(WireSubscription(sub: sub + 1, query: query.name, window: WireWindow(start: 0, count: 1_000))))
            guard case let .reset(reset) = try await wire.next() else {
                Issue.record("\(query.name): no reset")
                continue
            }
            // The identity is the first column but in `pinned`.
            let idColumn = query.name == "pinned" ? 1 : 0
            #expect(reset.rows.allSatisfy { row in row.values.map { $0[idColumn] == row.id } ?? true }, "\(query.name)")
            // The server's list is the SELECT's (an oracle independent of both comparators), ties
            // broken by the identity as the list breaks them (a refetched query: as SQLite returns them).
            let written = try #require(try query.sql(for: [:])?.text)
            let oracleSQL = Self.asWritten.contains(query.name) ? written : written + (["joined", "pinned"].contains(query.name) ? ", i.id" : ", id")
            let selected = try await pool.read { db in try Row.fetchAll(db, sql: oracleSQL).map { $0[idColumn] as DatabaseValue } }
            #expect(reset.rows.map(\.id) == selected.map { Self.wire($0) }, "seed \(seed), \(query.name): the list is not the SELECT's")
            guard Self.stated.contains(query.name) else {
                #expect(reset.order == nil, "\(query.name) states an order it cannot: \(String(describing: reset.order))")
                continue
            }
            if query.name == "pinned" { #expect(reset.order?.terms.first?.column == 2, "the order is stated on i.name, not on the subquery") }
            let order = try #require(reset.order, "\(query.name) states no order")
            #expect(order.terms.last?.column == nil, "the identity breaks ties")
            let rows = reset.rows.compactMap { row in row.values.map { (id: row.id, values: $0) } }
            #expect(rows.count == 150, "\(query.name): every row with its values")
            // Each row before the next, and before random later ones (the order is total and transitive).
            for index in rows.indices.dropLast() {
                #expect(order.compare(rows[index], rows[index + 1]) < 0,
                        "seed \(seed), \(query.name): \(rows[index]) should come before \(rows[index + 1])")
                let later = Int.random(in: (index + 1)..<rows.count, using: &random)
                #expect(order.compare(rows[later], rows[index]) > 0, "seed \(seed), \(query.name): rows \(index) and \(later)")
            }
            // Sorting a shuffled copy by the order gives the server's list back.
            #expect(rows.shuffled(using: &random).sorted { order.compare($0, $1) < 0 }.map(\.id) == rows.map(\.id), "seed \(seed), \(query.name)")
        }
        wire.connection.close()
        await group.triggerGracefulShutdown()
        _ = await running.result
    }

    static func wire(_ value: DatabaseValue) -> WireValue {
        switch value.storage {
        case .null: .null
        case let .int64(number): .integer(number)
        case let .double(number): .real(number)
        case let .string(text): .text(text)
        case let .blob(data): .blob([UInt8](data))
        }
    }

    @Test("an order survives the JSON round trip; a malformed one is a typed error")
    func orderCoding() throws {
        let order = WireOrder(terms: [WireOrderTerm(column: 1, descending: true, nullsFirst: false, collation: .nocase),
                                      WireOrderTerm(column: nil, nullsFirst: true)])
        let reset = WireReset(sub: 1, version: WireVersion(epoch: "e", sequence: 1), reason: .subscribed, columns: ["id", "name"],
                              sections: [WireSection(key: .null, count: 0)], window: WireWindow(start: 0, count: 0), rows: [], order: order)
        let frame = ServerMessage.reset(reset).encoded()
        #expect(try ServerMessage.decode(Array(frame.utf8)) == .reset(reset))
        for bad in [#""order":[]"#, #""order":[{"column":2,"descending":false,"nullsFirst":true}]"#,
                    #""order":[{"column":0,"descending":false}]"#, #""order":[{"column":0,"descending":false,"nullsFirst":true,"collation":"icu"}]"#] {
            let text = frame.replacingOccurrences(of: #""order":[{"column":1,"descending":true,"nullsFirst":false,"collation":"nocase"},{"column":null,"descending":false,"nullsFirst":true}]"#, with: bad)
            #expect(text != frame)
            #expect(throws: WireDecodingError.self, "\(bad)") { try ServerMessage.decode(Array(text.utf8)) }
        }
    }
}

extension ListOrderTests {
    @Test("the order's comparisons are the server index's: every pair of hostile values, every collation and direction")
    func sameAsTheIndex() {
        var random = SeededRandomNumberGenerator(seed: 0x0D_2026)
        let values: [WireValue] = (0..<60).map { _ in Self.wire(Self.value(&random)) } + Self.texts.map { .text($0) }
        for collation in WireOrderTerm.Collation.allCases {
            for descending in [false, true] {
                for nullsFirst in [false, true] {
                    let term = WireOrderTerm(column: 0, descending: descending, nullsFirst: nullsFirst, collation: collation)
                    let rule = SortTerm.Collation(collation)
                    for a in values {
                        for b in values {
                            let index = SortKeyComparator.compare(a.sql, b.sql, .init(descending: descending, nullsFirst: nullsFirst, collation: rule))
                            #expect(term.compare(a, b).signum() == index.signum(), "\(a) vs \(b), \(collation), descending \(descending), nulls first \(nullsFirst)")
                        }
                    }
                }
            }
        }
    }
}

extension SortTerm.Collation {
    init(_ collation: WireOrderTerm.Collation) {
        switch collation {
        case .binary: self = .binary
        case .nocase: self = .nocase
        case .rtrim: self = .rtrim
        }
    }
}
