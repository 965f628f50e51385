/// Turns the identity pairing into the logical changes; staging is the one stager's job
/// (`Changeset+Staging.swift`).
extension _SnapshotMatching {
    @inlinable
    func makeChangeset() -> Changeset<SectionModel, Item> {
        Changeset(changes: logicalChanges(), from: old, to: new, duplicates: duplicates)
    }

    @inlinable
    func logicalChanges() -> ListChanges {
        var logical = ListChanges()
        addSectionChanges(to: &logical)
        addOldItemChanges(to: &logical)
        addNewItemChanges(to: &logical, isMoved: movedItems())
        return logical
    }

    /// Sections: deletes, reloads, inserts, and moves as the complement of an LIS.
    @inlinable
    func addSectionChanges(to logical: inout ListChanges) {
        let oldSectionCount = old.sections.count
        let newSectionCount = new.sections.count
        for oldIndex in 0..<oldSectionCount {
            let newIndex = Int(oldSectionToNew[oldIndex])
            if newIndex < 0 {
                logical.sectionDeletes.append(oldIndex)
            } else if !new.sections[newIndex].model.isContentEqual(to: old.sections[oldIndex].model) {
                logical.sectionReloads.append(oldIndex)
            }
        }
        var survivingOrder = [Int32]()
        var survivingNewIndex = [Int]()
        for newIndex in 0..<newSectionCount {
            let oldIndex = newSectionToOld[newIndex]
            if oldIndex < 0 {
                logical.sectionInserts.append(newIndex)
            } else {
                survivingOrder.append(oldIndex)
                survivingNewIndex.append(newIndex)
            }
        }
        for (position, staysInPlace) in _longestIncreasingSubsequenceMask(survivingOrder).enumerated() where !staysInPlace {
            logical.sectionMoves.append(Move(from: Int(survivingOrder[position]), to: survivingNewIndex[position]))
        }
    }

    /// Items of the old state: deletes and reloads.
    @inlinable
    func addOldItemChanges(to logical: inout ListChanges) {
        var flat = 0
        for oldSection in 0..<old.sections.count {
            for (itemIndex, item) in old.sections[oldSection].items.enumerated() {
                defer { flat += 1 }
                let path = ItemPath(section: oldSection, item: itemIndex)
                let newIndex = Int(oldToNew[flat])
                guard newIndex >= 0, isCarried(old: flat, new: newIndex) else {
                    logical.itemDeletes.append(path)
                    continue
                }
                if !newItem(newIndex).isContentEqual(to: item) { logical.itemReloads.append(path) }
            }
        }
    }

    /// Which rows of the new state moved: within a section the rows that keep their relative
    /// order (an LIS) stay; a row that changes section always moves.
    @inlinable
    func movedItems() -> [Bool] {
        let newSectionCount = new.sections.count
        var sameSectionOld = [Int32]()
        var sameSectionNew = [Int]()
        var isMoved = [Bool](repeating: false, count: newToOld.count)
        for newSection in 0..<newSectionCount {
            let oldSection = newSectionToOld[newSection]
            guard oldSection >= 0 else { continue }
            sameSectionOld.removeAll(keepingCapacity: true)
            sameSectionNew.removeAll(keepingCapacity: true)
            for newIndex in newStart[newSection]..<newStart[newSection + 1] {
                let oldIndex = Int(newToOld[newIndex])
                guard oldIndex >= 0 else { continue }
                let fromSection = oldSectionOf[oldIndex]
                guard oldSectionToNew[Int(fromSection)] >= 0 else { continue }
                if fromSection == oldSection {
                    sameSectionOld.append(Int32(truncatingIfNeeded: oldIndex))
                    sameSectionNew.append(newIndex)
                } else {
                    isMoved[newIndex] = true
                }
            }
            for (position, staysInPlace) in _longestIncreasingSubsequenceMask(sameSectionOld).enumerated() where !staysInPlace {
                isMoved[sameSectionNew[position]] = true
            }
        }
        return isMoved
    }

    /// Items of the new state: inserts and moves, in new order.
    @inlinable
    func addNewItemChanges(to logical: inout ListChanges, isMoved: [Bool]) {
        var flat = 0
        for newSection in 0..<new.sections.count {
            for itemIndex in 0..<new.sections[newSection].items.count {
                defer { flat += 1 }
                let path = ItemPath(section: newSection, item: itemIndex)
                let oldIndex = Int(newToOld[flat])
                if oldIndex < 0 || !isCarried(old: oldIndex, new: flat) {
                    logical.itemInserts.append(path)
                } else if isMoved[flat] {
                    let fromSection = Int(oldSectionOf[oldIndex])
                    logical.itemMoves.append(Move(from: ItemPath(section: fromSection, item: oldIndex - oldStart[fromSection]), to: path))
                }
            }
        }
    }
}
