import ListTesting
import Testing
@testable import LiveQuery

struct OrderIndexTests {
    @Test("random inserts and removes keep positions equal to a sorted array's, across chunk splits and copies")
    func matchesSortedArray() {
        let seed: UInt64 = 0x0DE7_2026
        print("OrderIndexTests: seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let comparator = SortKeyComparator(terms: [SortTerm("v")], collations: [.binary])
        var index = OrderIndex(comparator: comparator)
        var reference: [IndexEntry] = []
        var published: [(OrderIndex, [IndexEntry])] = []
        for step in 0..<6_000 {
            if reference.isEmpty || Int.random(in: 0..<3, using: &random) > 0 {
                let entry = IndexEntry(key: .single(.integer(Int64.random(in: 0..<500, using: &random))), rowid: Int64(step), version: .null)
                let position = index.insert(entry)
                let expected = reference.firstIndex { comparator.compare($0, entry) > 0 } ?? reference.count
                reference.insert(entry, at: expected)
                #expect(position == expected)
            } else {
                let victim = reference.remove(at: Int.random(in: 0..<reference.count, using: &random))
                #expect(index.remove(victim) != nil)
            }
            if step % 1_000 == 0 { published.append((index, reference)) }
        }
        #expect(index.count == reference.count)
        #expect(index.entries(in: 0..<index.count).map(\.rowid) == reference.map(\.rowid))
        for (position, entry) in reference.enumerated() where position % 97 == 0 {
            #expect(index.position(of: entry) == position)
            #expect(index.entry(at: position)?.rowid == entry.rowid)
        }
        // Copies published earlier still show their own state (copy on write per chunk).
        for (copy, expected) in published {
            #expect(copy.entries(in: 0..<copy.count).map(\.rowid) == expected.map(\.rowid))
        }
    }
}
