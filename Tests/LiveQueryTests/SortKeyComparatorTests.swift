import Foundation
import GRDB
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The comparator against SQLite's own ORDER BY, over random values of every storage class.
struct SortKeyComparatorTests {
    static let seed: UInt64 = 0x50A7_2026

    static func randomValue(_ random: inout SeededRandomNumberGenerator) -> DatabaseValue {
        let texts = ["", "a", "A", "a ", "a  ", " a", "b", "B", "_", "Z", "e", "É", "é", "10", "9", "ab", "aB", "Ab", "abc", "ABC "]
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return .null
        case 1: return Int64.random(in: -3...3, using: &random).databaseValue
        case 2: return [Int64.max, Int64.min, 9_007_199_254_740_993, 9_007_199_254_740_992, 0].randomElement(using: &random)!.databaseValue
        case 3: return [0.0, -0.0, 1.0, 2.5, -2.5, 9_007_199_254_740_992.0, 1e300, -1e300, 9.2233720368547758e18].randomElement(using: &random)!.databaseValue
        case 4: return Double(Int.random(in: -3...3, using: &random)).databaseValue
        case 5, 6, 7: return texts.randomElement(using: &random)!.databaseValue
        default:
            let bytes = (0..<Int.random(in: 0...2, using: &random)).map { _ in [UInt8(0), 0xFF, 0x41].randomElement(using: &random)! }
            return Data(bytes).databaseValue
        }
    }

    @Test("sorting with the comparator equals SQLite's ORDER BY for every collation, direction and NULLS placement")
    func comparatorMatchesSQLite() throws {
        print("SortKeyComparatorTests: seed \(Self.seed)")
        var random = SeededRandomNumberGenerator(seed: Self.seed)
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t(a, b)")   // no affinity: values stay as stored
            for _ in 0..<400 {
                try db.execute(sql: "INSERT INTO t(a, b) VALUES (?, ?)", arguments: [Self.randomValue(&random), Self.randomValue(&random)])
            }
        }
        let collations: [SortTerm.Collation] = [.binary, .nocase, .rtrim]
        for collation in collations {
            for direction in [SortTerm.Direction.ascending, .descending] {
                for nulls in [SortTerm.NullsOrder?.none, .first, .last] {
                    let terms = [SortTerm("a", direction, collation: collation, nulls: nulls), SortTerm("b", .descending, collation: collation)]
                    let comparator = SortKeyComparator(terms: terms, collations: [collation, collation])
                    let orderBy = terms.map { $0.sql(collation: collation) }.joined(separator: ", ")
                    let (expected, entries) = try queue.read { db in
                        let expected = try Int64.fetchAll(db, sql: "SELECT rowid FROM t ORDER BY \(orderBy), rowid")
                        let entries = try Row.fetchAll(db, sql: "SELECT rowid, a, b FROM t").map { row in
                            IndexEntry(key: SortKey([SQLValue(row[1] as DatabaseValue), SQLValue(row[2] as DatabaseValue)]), rowid: row[0], token: 0)
                        }
                        return (expected, entries)
                    }
                    let sorted = entries.sorted { comparator.compare($0, $1) < 0 }.map(\.rowid)
                    #expect(sorted == expected, "ORDER BY \(orderBy)")
                }
            }
        }
    }

    @Test("values that SQLite's facts single out compare as documented")
    func documentedFacts() {
        let rule = SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary)
        func compare(_ a: SQLValue, _ b: SQLValue, _ collation: SortTerm.Collation = .binary) -> Int {
            SortKeyComparator.compare(a, b, SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: collation))
        }
        #expect(SortKeyComparator.compare(.integer(9_007_199_254_740_993), .real(9_007_199_254_740_992.0), rule) > 0)
        #expect(compare(.integer(1), .real(1.0)) == 0)
        #expect(compare(.real(-0.0), .integer(0)) == 0)
        #expect(compare(.text("_"), .text("A"), .nocase) < 0)
        #expect(compare(.text("É"), .text("é"), .nocase) != 0)
        #expect(compare(.text("a  "), .text("a"), .rtrim) == 0)
        // NOCASE compares up to the left text's first NUL, then by length (the sqlite3 shell:
        // 'a'||char(0)||'x' = 'a'||char(0)||'y' COLLATE NOCASE; 'a'||char(0) < 'a'||char(0)||'x';
        // 'a'||char(0) < 'a'||char(1); 'A' < 'a'||char(0); 'a'||char(1) > 'A'||char(0)||'z').
        #expect(compare(.text("a\0x"), .text("a\0y"), .nocase) == 0)
        #expect(compare(.text("a\0x"), .text("a\0y"), .binary) < 0)
        #expect(compare(.text("a\0"), .text("a\0x"), .nocase) < 0)
        #expect(compare(.text("a\0"), .text("a\u{1}"), .nocase) < 0)
        #expect(compare(.text("A"), .text("a\0"), .nocase) < 0)
        #expect(compare(.text("a\u{1}"), .text("A\0z"), .nocase) > 0)
        #expect(compare(.blob([]), .blob([0])) < 0)
        #expect(compare(.text("z"), .blob([])) < 0)
        #expect(compare(.null, .integer(Int64.min)) < 0)
    }
}
