import ListTesting
import Testing
@testable import LiveQueryCore

/// The persistent counted tree against a sorted array, through splits, merges and copies.
struct CountedTreeTests {
    struct Tracker: LeafTracker {
        var leafOf: [Int64: UInt32] = [:]
        mutating func element(_ element: IndexEntry, movedTo leaf: UInt32) { leafOf[element.rowid] = leaf }
    }

    @Test("random inserts and removes keep positions, leaves and published snapshots right")
    func matchesSortedArray() {
        let seed: UInt64 = 0x0DE7_2026
        print("CountedTreeTests: seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let comparator = SortKeyComparator(terms: [SortTerm("v")], collations: [.binary])
        let order = RowOrder(ordering: comparator)
        var tracker = Tracker()
        var tree = CountedTree<IndexEntry>(sorted: [], tracker: &tracker)
        var reference: [IndexEntry] = []
        var published: [(FrozenTree<IndexEntry>, [Int64])] = []
        func entry(_ value: Int64, _ rowid: Int64) -> IndexEntry { IndexEntry(key: .single(.integer(value)), rowid: rowid, token: 0) }
        for step in 0..<20_000 {
            // Grow, then shrink, so that leaves split and then merge.
            let growing = step < 12_000
            if reference.isEmpty || Int.random(in: 0..<4, using: &random) < (growing ? 3 : 1) {
                let new = entry(Int64.random(in: 0..<2_000, using: &random), Int64(step))
                let position = tree.insert(new, order: order, tracker: &tracker)
                let expected = reference.firstIndex { comparator.compare($0, new) > 0 } ?? reference.count
                reference.insert(new, at: expected)
                #expect(position == expected, "insert at step \(step)")
            } else {
                let victim = reference.remove(at: Int.random(in: 0..<reference.count, using: &random))
                let position = tree.remove(victim, order: order, tracker: &tracker)
                #expect(position != nil, "remove at step \(step)")
            }
            if step % 1_500 == 0 { published.append((tree.publish(), reference.map(\.rowid))) }
        }
        let final = tree.publish()
        #expect(final.count == reference.count)
        var all: [Int64] = []
        final.forEach(in: 0..<final.count) { all.append($0.rowid); return true }
        #expect(all == reference.map(\.rowid))
        for (position, element) in reference.enumerated() where position % 37 == 0 {
            #expect(final.lowerBound(of: element, order: order) == (position, true))
            #expect(final.element(at: position).rowid == element.rowid)
            // The tracker says which leaf holds each row, and that leaf holds it.
            let leaf = tracker.leafOf[element.rowid].flatMap { tree.leaf($0) }
            #expect(leaf?.elements.contains { $0.rowid == element.rowid } == true, "row \(element.rowid)")
        }
        // Snapshots published earlier still show their own state.
        for (snapshot, expected) in published {
            var rows: [Int64] = []
            snapshot.forEach(in: 0..<snapshot.count) { rows.append($0.rowid); return true }
            #expect(rows == expected)
        }
    }

    @Test("sections weigh their rows: the section holding a row, and where a section starts")
    func weights() {
        let counts = (0..<3_000).map { ($0 * 7) % 13 + 1 }
        let sections = counts.enumerated().map { SectionEntry(key: .integer(Int64($0.offset)), count: $0.element) }
        let tree = CountedTree<SectionEntry>(sorted: sections).current
        var start = 0
        for (index, count) in counts.enumerated() where index % 11 == 0 {
            let before = counts[0..<index].reduce(0, +)
            #expect(tree.weight(before: index) == before)
            let holding = tree.element(holdingWeight: before + count - 1)
            #expect(holding.position == index && holding.weightBefore == before)
            start = before
        }
        #expect(start > 0)
        #expect(tree.weight == counts.reduce(0, +))
    }
}

/// The rowid map against a dictionary, through growth, backward-shift deletions and the one
/// rowid that doubles as the empty marker.
struct RowidMapTests {
    @Test("random inserts, updates and removals agree with a dictionary")
    func matchesDictionary() {
        let seed: UInt64 = 0x2011_D0A9
        print("RowidMapTests: seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        var map = RowidMap()
        var reference: [Int64: UInt32] = [:]
        let keys: [Int64] = [Int64.min, Int64.max, -1, 0] + (0..<3_000).map { _ in Int64.random(in: -5_000...5_000, using: &random) }
        for step in 0..<60_000 {
            let key = keys[Int.random(in: 0..<keys.count, using: &random)]
            if Int.random(in: 0..<3, using: &random) == 0 {
                map[key] = nil
                reference[key] = nil
            } else {
                let value = UInt32(step)
                map[key] = value
                reference[key] = value
            }
            if step % 997 == 0 {
                #expect(map.count == reference.count, "step \(step)")
                for probe in keys.prefix(200) { #expect(map[probe] == reference[probe], "key \(probe), step \(step)") }
            }
        }
        for key in keys { #expect(map[key] == reference[key]) }
    }

    @Test("updating keys already there never grows the table (a leaf split moves 128 rows so), adding past the load does")
    func updatesDoNotGrow() {
        var map = RowidMap(capacity: 1_000)
        let slots = map.slotCount
        // Full up to the load at which the next new key grows the table.
        var filled: Int64 = 0
        while (map.count + 1) * 20 <= slots * 17 {
            map[filled] = 1
            filled += 1
        }
        for round in 0..<3 {
            for key in 0..<filled { map[key] = UInt32(round) }
        }
        #expect(map.slotCount == slots)
        map[filled] = 9
        #expect(map.slotCount > slots && map.count == Int(filled) + 1 && map[filled] == 9 && map[0] == 2)
    }
}
