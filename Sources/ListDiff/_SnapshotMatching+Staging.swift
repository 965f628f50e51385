/// Turns the identity pairing into the logical changes and the staged batches.
///
/// Why five stages: UIKit rejects a reload and a move of the same item, a delete and a reload of
/// the same path, and item operations inside a section that is moved or reloaded in the same
/// batch. The safe order (uikit-batch-rules.md §2) is: (a) item reloads at old paths, (b) section
/// and item deletes, (c) section inserts and moves, (d) item inserts and moves, (e) section
/// reloads. Each non-empty stage is one batch with its own intermediate snapshot.
extension _SnapshotMatching {
    @inlinable
    func makeChangeset() -> Changeset<SectionModel, Item> {
        var logical = ListChanges()
        var stageA = ListChanges(), stageB = ListChanges(), stageC = ListChanges()
        var stageD = ListChanges(), stageE = ListChanges()
        let oldSectionCount = old.sections.count
        let newSectionCount = new.sections.count

        // Sections.
        var sectionReloaded = [Bool](repeating: false, count: newSectionCount)
        var deletedSectionsBefore = [Int](repeating: 0, count: oldSectionCount)
        var deletedSoFar = 0
        for oldIndex in 0..<oldSectionCount {
            deletedSectionsBefore[oldIndex] = deletedSoFar
            let newIndex = Int(oldSectionToNew[oldIndex])
            if newIndex < 0 {
                logical.sectionDeletes.append(oldIndex)
                deletedSoFar += 1
            } else if !new.sections[newIndex].model.isContentEqual(to: old.sections[oldIndex].model) {
                sectionReloaded[newIndex] = true
                logical.sectionReloads.append(oldIndex)
                stageE.sectionReloads.append(newIndex)
            }
        }
        stageB.sectionDeletes = logical.sectionDeletes
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
        stageC.sectionInserts = logical.sectionInserts
        for (position, staysInPlace) in _longestIncreasingSubsequenceMask(survivingOrder).enumerated() where !staysInPlace {
            let oldIndex = Int(survivingOrder[position])
            let newIndex = survivingNewIndex[position]
            logical.sectionMoves.append(Move(from: oldIndex, to: newIndex))
            stageC.sectionMoves.append(Move(from: oldIndex - deletedSectionsBefore[oldIndex], to: newIndex))
        }

        // Items of the old state: deletes, reloads, and each survivor's index once deletes are done.
        let oldTotal = oldToNew.count
        var indexAfterDeletes = [Int32](repeating: -1, count: oldTotal)
        var flat = 0
        for oldSection in 0..<oldSectionCount {
            let sectionSurvives = oldSectionToNew[oldSection] >= 0
            var survivors: Int32 = 0
            for (itemIndex, item) in old.sections[oldSection].items.enumerated() {
                defer { flat += 1 }
                let path = ItemPath(section: oldSection, item: itemIndex)
                let newIndex = Int(oldToNew[flat])
                guard newIndex >= 0, isCarried(old: flat, new: newIndex) else {
                    logical.itemDeletes.append(path)
                    if sectionSurvives { stageB.itemDeletes.append(path) }
                    continue
                }
                indexAfterDeletes[flat] = survivors
                survivors += 1
                if !newItem(newIndex).isContentEqual(to: item) {
                    logical.itemReloads.append(path)
                    if !sectionReloaded[Int(newSectionOf[newIndex])] { stageA.itemReloads.append(path) }
                }
            }
        }

        // Items of the new state: inserts and moves, in new order.
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
        flat = 0
        for newSection in 0..<newSectionCount {
            let sectionIsNew = newSectionToOld[newSection] < 0
            for itemIndex in 0..<new.sections[newSection].items.count {
                defer { flat += 1 }
                let path = ItemPath(section: newSection, item: itemIndex)
                let oldIndex = Int(newToOld[flat])
                if oldIndex < 0 || !isCarried(old: oldIndex, new: flat) {
                    logical.itemInserts.append(path)
                    if !sectionIsNew { stageD.itemInserts.append(path) }
                } else if isMoved[flat] {
                    let fromSection = Int(oldSectionOf[oldIndex])
                    logical.itemMoves.append(Move(from: ItemPath(section: fromSection, item: oldIndex - oldStart[fromSection]), to: path))
                    let stagedFrom = ItemPath(section: Int(oldSectionToNew[fromSection]), item: Int(indexAfterDeletes[oldIndex]))
                    stageD.itemMoves.append(Move(from: stagedFrom, to: path))
                }
            }
        }

        let batches = [stageA, stageB, stageC, stageD, stageE]
        guard let lastBatch = batches.lastIndex(where: { !$0.isEmpty }) else {
            return Changeset(changes: logical, stages: [], duplicates: duplicates)
        }
        var stages: [ChangesetStage<SectionModel, Item>] = []
        var sectionsAfterDeletes: [[Item]] = []
        for (number, batch) in batches.enumerated() {
            // Stages (b) and (c) show the survivors of the deletes, unless they are the last stage.
            if number == 1 && ((!stageB.isEmpty && lastBatch > 1) || (!stageC.isEmpty && lastBatch > 2)) {
                sectionsAfterDeletes = survivingItemsAfterDeletes()
            }
            guard !batch.isEmpty else { continue }
            let snapshot: ListSnapshot<SectionModel, Item>
            if number == lastBatch {
                snapshot = new
            } else {
                switch number {
                case 0: snapshot = snapshotAfterReloads(sectionReloaded: sectionReloaded)
                case 1: snapshot = snapshotAfterDeletes(sectionsAfterDeletes, sectionReloaded: sectionReloaded)
                case 2: snapshot = snapshotAfterSectionMoves(sectionsAfterDeletes, sectionReloaded: sectionReloaded)
                default: snapshot = snapshotAfterItemMoves(sectionReloaded: sectionReloaded)
                }
            }
            stages.append(ChangesetStage(changes: batch, snapshot: snapshot))
        }
        return Changeset(changes: logical, stages: stages, duplicates: duplicates)
    }

    /// The model a surviving section shows before stage (e): the old one while a reload is due.
    @inlinable
    func pendingModel(newSection: Int, sectionReloaded: [Bool]) -> SectionModel {
        sectionReloaded[newSection]
            ? old.sections[Int(newSectionToOld[newSection])].model
            : new.sections[newSection].model
    }

    /// Stage (a): the old structure, with every carried row already showing its new content.
    @inlinable
    func snapshotAfterReloads(sectionReloaded: [Bool]) -> ListSnapshot<SectionModel, Item> {
        var sections: [SnapshotSection<SectionModel, Item>] = []
        sections.reserveCapacity(old.sections.count)
        var flat = 0
        for (oldSection, section) in old.sections.enumerated() {
            let newSection = Int(oldSectionToNew[oldSection])
            let model = newSection >= 0 ? pendingModel(newSection: newSection, sectionReloaded: sectionReloaded) : section.model
            var items: [Item] = []
            items.reserveCapacity(section.items.count)
            for item in section.items {
                let newIndex = Int(oldToNew[flat])
                items.append(newIndex >= 0 && isCarried(old: flat, new: newIndex) ? newItem(newIndex) : item)
                flat += 1
            }
            sections.append(SnapshotSection(model, items: items))
        }
        return ListSnapshot(sections: sections)
    }

    /// For each old section, the rows it still holds once stage (b) deleted the others.
    @inlinable
    func survivingItemsAfterDeletes() -> [[Item]] {
        var result: [[Item]] = []
        result.reserveCapacity(old.sections.count)
        var flat = 0
        for section in old.sections {
            var items: [Item] = []
            for _ in section.items.indices {
                let newIndex = Int(oldToNew[flat])
                if newIndex >= 0 && isCarried(old: flat, new: newIndex) { items.append(newItem(newIndex)) }
                flat += 1
            }
            result.append(items)
        }
        return result
    }

    @inlinable
    func snapshotAfterDeletes(_ survivors: [[Item]], sectionReloaded: [Bool]) -> ListSnapshot<SectionModel, Item> {
        var sections: [SnapshotSection<SectionModel, Item>] = []
        for oldSection in old.sections.indices {
            let newSection = Int(oldSectionToNew[oldSection])
            guard newSection >= 0 else { continue }
            sections.append(SnapshotSection(pendingModel(newSection: newSection, sectionReloaded: sectionReloaded), items: survivors[oldSection]))
        }
        return ListSnapshot(sections: sections)
    }

    @inlinable
    func snapshotAfterSectionMoves(_ survivors: [[Item]], sectionReloaded: [Bool]) -> ListSnapshot<SectionModel, Item> {
        var sections: [SnapshotSection<SectionModel, Item>] = []
        sections.reserveCapacity(new.sections.count)
        for newSection in new.sections.indices {
            let oldSection = Int(newSectionToOld[newSection])
            if oldSection < 0 {
                sections.append(new.sections[newSection])
            } else {
                sections.append(SnapshotSection(pendingModel(newSection: newSection, sectionReloaded: sectionReloaded), items: survivors[oldSection]))
            }
        }
        return ListSnapshot(sections: sections)
    }

    @inlinable
    func snapshotAfterItemMoves(sectionReloaded: [Bool]) -> ListSnapshot<SectionModel, Item> {
        var sections = new.sections
        for newSection in sections.indices where sectionReloaded[newSection] {
            sections[newSection].model = pendingModel(newSection: newSection, sectionReloaded: sectionReloaded)
        }
        return ListSnapshot(sections: sections)
    }
}
