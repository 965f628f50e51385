extension Changeset {
    /// Computes the changes that turn `old` into `new`; they are staged into UIKit-safe batches
    /// when ``stages`` is first read.
    ///
    /// Rows and sections are paired by identity (`id`); a paired row whose content differs
    /// (``ListElement/isContentEqual(to:)``) is reloaded. Rows that keep their relative order are
    /// never reported as moved: within a section the moves are the complement of a longest
    /// increasing subsequence; a row that changes section is always a move.
    ///
    /// Duplicated identifiers pair up occurrence by occurrence, in order, and are listed in
    /// ``duplicates``.
    ///
    /// - Complexity: O(n + m) hashing and passes for n old and m new rows, plus O(k log k) for
    ///   the longest-increasing-subsequence step over the k rows that stay in their section (O(k)
    ///   when few rows moved). Memory is linear. Staging is not part of this cost (see ``stages``).
    @inlinable
    public init(from old: ListSnapshot<SectionModel, Item>, to new: ListSnapshot<SectionModel, Item>) {
        let matching = _SnapshotMatching(old: old, new: new)
        self = matching.makeChangeset()
    }
}

/// The identity pairing of two snapshots, sections and items, flattened into index arrays.
@usableFromInline
struct _SnapshotMatching<SectionModel: ListElement, Item: ListElement> {
    @usableFromInline let old: ListSnapshot<SectionModel, Item>
    @usableFromInline let new: ListSnapshot<SectionModel, Item>
    @usableFromInline var oldSectionToNew: [Int32]
    @usableFromInline var newSectionToOld: [Int32]
    /// Flat index of each section's first item; one extra entry holds the total.
    @usableFromInline var oldStart: [Int]
    @usableFromInline var newStart: [Int]
    @usableFromInline var oldSectionOf: [Int32]
    @usableFromInline var newSectionOf: [Int32]
    @usableFromInline var oldToNew: [Int32]
    @usableFromInline var newToOld: [Int32]
    @usableFromInline var duplicates = DuplicateReport<SectionModel.ID, Item.ID>()

    @inlinable
    init(old: ListSnapshot<SectionModel, Item>, new: ListSnapshot<SectionModel, Item>) {
        self.old = old
        self.new = new

        var sectionTable = _IdentityTable<SectionModel.ID>(oldCount: old.sections.count, newCount: new.sections.count)
        for (index, section) in old.sections.enumerated().reversed() {
            sectionTable.addOld(section.model.id, hash: sectionTable.hash(section.model.id), at: index)
        }
        var newSectionToOld = [Int32]()
        newSectionToOld.reserveCapacity(new.sections.count)
        for section in new.sections {
            newSectionToOld.append(sectionTable.pairNew(section.model.id, hash: sectionTable.hash(section.model.id)))
        }
        var oldSectionToNew = [Int32](repeating: -1, count: old.sections.count)
        for (newIndex, oldIndex) in newSectionToOld.enumerated() where oldIndex >= 0 {
            oldSectionToNew[Int(oldIndex)] = Int32(truncatingIfNeeded: newIndex)
        }
        self.newSectionToOld = newSectionToOld
        self.oldSectionToNew = oldSectionToNew
        duplicates.sectionIDs = sectionTable.duplicates

        oldStart = Self.starts(of: old)
        newStart = Self.starts(of: new)
        let oldTotal = oldStart[old.sections.count]
        let newTotal = newStart[new.sections.count]

        var itemTable = _IdentityTable<Item.ID>(oldCount: oldTotal, newCount: newTotal)
        var oldSectionOf = [Int32]()
        oldSectionOf.reserveCapacity(oldTotal)
        for (sectionIndex, section) in old.sections.enumerated() {
            oldSectionOf.append(contentsOf: repeatElement(Int32(truncatingIfNeeded: sectionIndex), count: section.items.count))
        }
        let oldHashes = Self.hashes(of: old, total: oldTotal, table: itemTable)
        var flat = oldTotal
        for section in old.sections.reversed() {
            for item in section.items.reversed() {
                flat -= 1
                itemTable.addOld(item.id, hash: oldHashes[flat], at: flat)
            }
        }
        var newSectionOf = [Int32]()
        newSectionOf.reserveCapacity(newTotal)
        var newToOld = [Int32]()
        newToOld.reserveCapacity(newTotal)
        let newHashes = Self.hashes(of: new, total: newTotal, table: itemTable)
        flat = 0
        for (sectionIndex, section) in new.sections.enumerated() {
            for item in section.items {
                newToOld.append(itemTable.pairNew(item.id, hash: newHashes[flat]))
                flat += 1
            }
            newSectionOf.append(contentsOf: repeatElement(Int32(truncatingIfNeeded: sectionIndex), count: section.items.count))
        }
        var oldToNew = [Int32](repeating: -1, count: oldTotal)
        for (newIndex, oldIndex) in newToOld.enumerated() where oldIndex >= 0 {
            oldToNew[Int(oldIndex)] = Int32(truncatingIfNeeded: newIndex)
        }
        self.oldSectionOf = oldSectionOf
        self.newSectionOf = newSectionOf
        self.oldToNew = oldToNew
        self.newToOld = newToOld
        duplicates.itemIDs = itemTable.duplicates
    }

    /// Every item's hash under `table`, in flat order (see `_IdentityTable` for why a separate pass).
    @inlinable
    static func hashes(of snapshot: ListSnapshot<SectionModel, Item>, total: Int, table: borrowing _IdentityTable<Item.ID>) -> [Int] {
        // With no capacity the initializer writes the count into the shared empty-array storage:
        // harmless, but a data race when two threads diff empty lists (ThreadSanitizer sees it).
        guard total > 0 else { return [] }
        return [Int](unsafeUninitializedCapacity: total) { buffer, count in
            if let seed = table.byteHashSeed {
                for section in snapshot.sections {
                    for item in section.items {
                        buffer[count] = _IdentifierHashing.bytesHash(item.id, seed: seed)
                        count += 1
                    }
                }
            } else {
                for section in snapshot.sections {
                    for item in section.items {
                        buffer[count] = item.id.hashValue
                        count += 1
                    }
                }
            }
        }
    }

    @inlinable
    static func starts(of snapshot: ListSnapshot<SectionModel, Item>) -> [Int] {
        var starts = [Int]()
        starts.reserveCapacity(snapshot.sections.count + 1)
        var total = 0
        for section in snapshot.sections {
            starts.append(total)
            total += section.items.count
        }
        starts.append(total)
        return starts
    }

    /// Whether the old row `oldIndex`, paired with new row `newIndex`, stays in a surviving
    /// section on both sides — the only rows UIKit can move or reload rather than delete+insert.
    @inlinable
    func isCarried(old oldIndex: Int, new newIndex: Int) -> Bool {
        oldSectionToNew[Int(oldSectionOf[oldIndex])] >= 0 && newSectionToOld[Int(newSectionOf[newIndex])] >= 0
    }

    @inlinable
    func newItem(_ flat: Int) -> Item {
        // A flat list (the common case) reads its one array directly.
        if new.sections.count == 1 { return new.sections[0].items[flat] }
        let section = Int(newSectionOf[flat])
        return new.sections[section].items[flat - newStart[section]]
    }
}
