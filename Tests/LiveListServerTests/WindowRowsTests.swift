import ListDiff
import ListTesting
@testable import LiveListServer
import Testing

@Suite("Which window rows a client lacks")
struct WindowRowsTests {
    @Test("The two-ended scan finds exactly the rows a brute force finds: random transitions, windows and held ranges (seeded)")
    func againstBruteForce() {
        for seed in UInt64(0)..<300 {
            var random = SeededRandomNumberGenerator(seed: seed)
            let old = (0..<Int.random(in: 0...60, using: &random)).map { VersionedItem(id: $0, version: 0) }
            var new = old.filter { _ in Int.random(in: 0..<5, using: &random) > 0 }
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                new.insert(VersionedItem(id: 1_000 + new.count, version: 0), at: Int.random(in: 0...new.count, using: &random))
            }
            if new.count > 2, Int.random(in: 0..<2, using: &random) == 0 { new.swapAt(0, new.count - 1) }
            new = new.map { Int.random(in: 0..<8, using: &random) == 0 ? VersionedItem(id: $0.id, version: 1) : $0 }
            let changes = Changeset(from: ListSnapshot(items: old), to: ListSnapshot(items: new)).changes
            let mapping = PathMapping(changes)
            var changed = changes.itemInserts.map(\.item) + changes.itemMoves.map(\.to.item)
            changed += changes.itemReloads.compactMap { mapping.newPath(ofOld: $0)?.item }
            let rows = WindowRows(changed: changed.sorted(), sectionsMoved: false) { position in
                mapping.oldPath(ofNew: ItemPath(section: 0, item: position))?.item
            }
            let heldStart = Int.random(in: 0...max(0, old.count), using: &random)
            let held = heldStart..<min(old.count, heldStart + Int.random(in: 0...30, using: &random))
            let windowStart = Int.random(in: 0...max(0, new.count), using: &random)
            let window = windowStart..<min(new.count, windowStart + Int.random(in: 0...30, using: &random))
            let oldPosition = Dictionary(uniqueKeysWithValues: old.enumerated().map { ($1.id, $0) })
            let expected = window.filter { position in
                let item = new[position]
                guard let before = oldPosition[item.id], old[before].version == item.version, held.contains(before) else { return true }
                // A row the diff moved is sent again (its cell is new to the client's window rules).
                return changed.contains(position)
            }
            #expect(rows.missing(window: window, held: held) == expected, "seed \(seed): held \(held), window \(window)")
            #expect(rows.missing(window: window, held: held) == WindowRows(changed: changed.sorted(), sectionsMoved: true,
                                                                             oldPosition: rows.oldPosition).missing(window: window, held: held))
        }
    }
}
