import Foundation
import ListDiff
import ListTesting

/// A row that is nothing but its identity, as in the published diff benchmarks.
struct IdentityRow<ID: Hashable & Sendable>: ListElement, Hashable, Sendable {
    let id: ID
}

/// An old list and a new list derived from it by deleting, inserting and moving random rows.
struct DiffWorkload<ID: Hashable & Sendable> {
    let old: [ID]
    let new: [ID]

    /// Builds the new list by giving every row a sort key: survivors keep their old position,
    /// moved and inserted rows get random ones — O(n log n), unlike repeated array inserts.
    init(count: Int, deleted: Int, inserted: Int, moved: Int, seed: UInt64, makeID: (inout SeededRandomNumberGenerator) -> ID) {
        var random = SeededRandomNumberGenerator(seed: seed)
        let old = (0..<count).map { _ in makeID(&random) }
        var order = Array(0..<count)
        order.shuffle(using: &random)
        let deletedSet = Set(order.prefix(deleted))
        let movedSet = Set(order.dropFirst(deleted).prefix(moved))
        var keyed: [(key: Double, id: ID)] = []
        keyed.reserveCapacity(count - deleted + inserted)
        for (index, id) in old.enumerated() where !deletedSet.contains(index) {
            let key = movedSet.contains(index) ? Double.random(in: 0..<Double(count), using: &random) : Double(index)
            keyed.append((key, id))
        }
        for _ in 0..<inserted {
            keyed.append((Double.random(in: 0..<Double(count), using: &random), makeID(&random)))
        }
        keyed.sort { $0.key < $1.key }
        self.old = old
        self.new = keyed.map(\.id)
    }

    var snapshots: (old: ListSnapshot<SingleSection, IdentityRow<ID>>, new: ListSnapshot<SingleSection, IdentityRow<ID>>) {
        (ListSnapshot(items: old.map(IdentityRow.init)), ListSnapshot(items: new.map(IdentityRow.init)))
    }
}

/// UUIDs are 16 plain bytes compared bytewise, so the diff may hash them by their bytes.
extension UUID: BitwiseIdentifier {}
