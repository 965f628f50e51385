import ListDiff

extension HeadlessListView {
    /// Checks `batch` against the rules and, when it passes, moves the displayed cells to the state
    /// after it, reading new and reloaded cells from the data source (docs/UIKIT-BATCH-RULES.md §1.4).
    func commit(_ batch: PendingBatch, dataSource: any HeadlessListDataSource<Cell, Header>) throws(BatchUpdateViolation) {
        let counts = store?.counts ?? []
        let sections = try SectionSets(checking: batch.changes, before: counts.count, after: dataSource.numberOfSections())
        let itemCountsAfter = (0..<sections.after).map { dataSource.numberOfItems(inSection: $0) }
        let items = try checkItems(batch, sections: sections, counts: counts, itemCountsAfter: itemCountsAfter)
        try Self.checkItemCounts(items, sections: sections, counts: counts, itemCountsAfter: itemCountsAfter)

        // The batch is valid: build the state after it.
        var headers: [Header] = []
        headers.reserveCapacity(sections.after)
        for final in 0..<sections.after {
            let old = sections.finalToOld[final]
            if old < 0 || sections.reloaded.contains(old) {
                headers.append(dataSource.header(forSection: final))
            } else if let header = store?.headers[old] {
                headers.append(header)
            }
        }
        if store?.cells != nil {
            applyToEveryCell(sections, items, changes: batch.changes, itemCountsAfter: itemCountsAfter, dataSource: dataSource)
        } else {
            applyToRealizedCells(sections, items, changes: batch.changes, reconfigures: batch.itemReconfigures, dataSource: dataSource)
        }
        store?.headers = headers
        store?.counts = itemCountsAfter
        clampContentOffset()
        realizeVisibleCells()
    }

    /// A batch's section operations once they passed the rules, and where each old section ends up.
    struct SectionSets {
        var before: Int
        var after: Int
        var deleted: Set<Int>
        var inserted: Set<Int>
        var reloaded: Set<Int>
        var movedFrom: Set<Int>
        var movedTo: Set<Int>
        /// The old section at each final index; -1 for an inserted one.
        var finalToOld: [Int]
        /// The final indices of reloaded sections.
        var reloadedFinal: Set<Int>

        /// Checks the section operations: ranges, duplicates, conflicts, count (§2.1, §2.3–§2.8).
        init(checking changes: ListChanges, before: Int, after: Int) throws(BatchUpdateViolation) {
            self.before = before
            self.after = after
            for section in changes.sectionDeletes where !(0..<before).contains(section) {
                throw .sectionOutOfRange(.delete, section: section, count: before)
            }
            for section in changes.sectionReloads where !(0..<before).contains(section) {
                throw .sectionOutOfRange(.reload, section: section, count: before)
            }
            for move in changes.sectionMoves where !(0..<before).contains(move.from) {
                throw .sectionOutOfRange(.moveSource, section: move.from, count: before)
            }
            for section in changes.sectionInserts where !(0..<after).contains(section) {
                throw .sectionOutOfRange(.insert, section: section, count: after)
            }
            for move in changes.sectionMoves where !(0..<after).contains(move.to) {
                throw .sectionOutOfRange(.moveDestination, section: move.to, count: after)
            }
            deleted = try uniqueSet(changes.sectionDeletes) { .duplicateSectionOperation(.delete, section: $0) }
            inserted = try uniqueSet(changes.sectionInserts) { .duplicateSectionOperation(.insert, section: $0) }
            reloaded = try uniqueSet(changes.sectionReloads) { .duplicateSectionOperation(.reload, section: $0) }
            movedFrom = try uniqueSet(changes.sectionMoves.map(\.from)) { .duplicateSectionOperation(.moveSource, section: $0) }
            movedTo = try uniqueSet(changes.sectionMoves.map(\.to)) { .duplicateSectionOperation(.moveDestination, section: $0) }
            if let section = deleted.intersection(movedFrom).min() { throw .sectionDeletedAndMoved(section) }
            if let section = deleted.intersection(reloaded).min() { throw .sectionDeletedAndReloaded(section) }
            if let section = reloaded.intersection(movedFrom).min() { throw .sectionReloadedAndMoved(section) }
            if let section = inserted.intersection(movedTo).min() { throw .sectionInsertedAndMovedTo(section) }
            guard after == before + inserted.count - deleted.count else {
                throw .sectionCountMismatch(before: before, after: after, inserted: inserted.count, deleted: deleted.count)
            }

            // Inserts and move destinations take their slots; the untouched survivors (reloaded
            // ones included) fill the rest in their old order.
            var finalToOld = [Int](repeating: -1, count: after)
            for move in changes.sectionMoves { finalToOld[move.to] = move.from }
            var freeSlot = 0
            for section in 0..<before where !deleted.contains(section) && !movedFrom.contains(section) {
                while inserted.contains(freeSlot) || movedTo.contains(freeSlot) { freeSlot += 1 }
                finalToOld[freeSlot] = section
                freeSlot += 1
            }
            var oldToFinal = [Int](repeating: -1, count: before)
            for (final, old) in finalToOld.enumerated() where old >= 0 { oldToFinal[old] = final }
            self.finalToOld = finalToOld
            reloadedFinal = Set(reloaded.map { oldToFinal[$0] })
        }
    }

    /// A batch's item operations once they passed the rules.
    struct ItemSets {
        var deleted: Set<ItemPath>
        var inserted: Set<ItemPath>
        var reloaded: Set<ItemPath>
        var reconfigured: Set<ItemPath>
        var movedFrom: Set<ItemPath>
        var movedTo: Set<ItemPath>
    }

    /// Checks the item operations: ranges, the section-level rules (§2.3, §2.10, §2.11),
    /// duplicates and conflicts (§2.4–§2.9).
    func checkItems(_ batch: PendingBatch, sections: SectionSets, counts: [Int], itemCountsAfter: [Int]) throws(BatchUpdateViolation) -> ItemSets {
        let changes = batch.changes
        func checkOld(_ path: ItemPath, _ operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
            guard (0..<sections.before).contains(path.section) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.before, itemCount: nil)
            }
            let count = counts[path.section]
            guard (0..<count).contains(path.item) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.before, itemCount: count)
            }
            if sections.movedFrom.contains(path.section) || sections.reloaded.contains(path.section) {
                throw .itemOperationInMovedOrReloadedSection(operation, path)
            }
        }
        func checkNew(_ path: ItemPath, _ operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
            guard (0..<sections.after).contains(path.section) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.after, itemCount: nil)
            }
            let count = itemCountsAfter[path.section]
            guard (0..<count).contains(path.item) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.after, itemCount: count)
            }
            if sections.movedTo.contains(path.section) || sections.reloadedFinal.contains(path.section) {
                throw .itemOperationInMovedOrReloadedSection(operation, path)
            }
        }
        var itemDeletes: [ItemPath] = []
        for path in changes.itemDeletes {
            try checkOld(path, .delete)
            // Deleting items of a deleted section is tolerated and ignored (§2.10).
            if !sections.deleted.contains(path.section) { itemDeletes.append(path) }
        }
        for path in changes.itemReloads {
            try checkOld(path, .reload)
            if sections.deleted.contains(path.section) { throw .itemOperationInDeletedSection(.reload, path) }
        }
        for path in batch.itemReconfigures {
            try checkOld(path, .reconfigure)
            if sections.deleted.contains(path.section) { throw .itemOperationInDeletedSection(.reconfigure, path) }
        }
        for move in changes.itemMoves {
            try checkOld(move.from, .moveSource)
            if sections.deleted.contains(move.from.section) { throw .moveOutOfDeletedSection(move.from) }
            try checkNew(move.to, .moveDestination)
            if sections.inserted.contains(move.to.section) { throw .moveIntoInsertedSection(move.to) }
        }
        var itemInserts: [ItemPath] = []
        for path in changes.itemInserts {
            try checkNew(path, .insert)
            if sections.inserted.contains(path.section) {
                if isStrict { throw .insertIntoInsertedSection(path) }
                warnings.append(.insertIntoInsertedSection(path))
            } else {
                itemInserts.append(path)
            }
        }

        let items = ItemSets(
            deleted: try uniqueSet(itemDeletes) { .duplicateItemOperation(.delete, $0) },
            inserted: try uniqueSet(itemInserts) { .duplicateItemOperation(.insert, $0) },
            reloaded: try uniqueSet(changes.itemReloads) { .duplicateItemOperation(.reload, $0) },
            reconfigured: try uniqueSet(batch.itemReconfigures) { .duplicateItemOperation(.reconfigure, $0) },
            movedFrom: try uniqueSet(changes.itemMoves.map(\.from)) { .duplicateItemOperation(.moveSource, $0) },
            movedTo: try uniqueSet(changes.itemMoves.map(\.to)) { .duplicateItemOperation(.moveDestination, $0) })
        let rereads = items.reloaded.union(items.reconfigured)
        if let path = items.deleted.intersection(items.movedFrom).min() { throw .itemDeletedAndMoved(path) }
        if let path = items.inserted.intersection(items.movedTo).min() { throw .itemInsertedAndMovedTo(path) }
        if let path = items.deleted.intersection(rereads).min() { throw .itemDeletedAndReloaded(path) }
        if let path = items.movedFrom.intersection(rereads).min() { throw .itemReloadedAndMoved(path) }
        return items
    }

    /// Checks the item counts of the sections that exist before and after (§2.2).
    static func checkItemCounts(_ items: ItemSets, sections: SectionSets, counts: [Int], itemCountsAfter: [Int]) throws(BatchUpdateViolation) {
        var insertedPerSection = [Int](repeating: 0, count: sections.after)
        var movedInPerSection = [Int](repeating: 0, count: sections.after)
        var deletedPerSection = [Int](repeating: 0, count: sections.before)
        var movedOutPerSection = [Int](repeating: 0, count: sections.before)
        for path in items.inserted { insertedPerSection[path.section] += 1 }
        for path in items.movedTo { movedInPerSection[path.section] += 1 }
        for path in items.deleted { deletedPerSection[path.section] += 1 }
        for path in items.movedFrom { movedOutPerSection[path.section] += 1 }
        for final in 0..<sections.after {
            let old = sections.finalToOld[final]
            guard old >= 0, !sections.reloaded.contains(old) else { continue }
            let expected = counts[old] + insertedPerSection[final] - deletedPerSection[old]
                + movedInPerSection[final] - movedOutPerSection[old]
            guard itemCountsAfter[final] == expected else {
                throw .itemCountMismatch(
                    section: final, before: counts[old], after: itemCountsAfter[final],
                    inserted: insertedPerSection[final], deleted: deletedPerSection[old],
                    movedIn: movedInPerSection[final], movedOut: movedOutPerSection[old])
            }
        }
    }

    private func applyToEveryCell(_ sections: SectionSets, _ items: ItemSets, changes: ListChanges, itemCountsAfter: [Int],
                                  dataSource: any HeadlessListDataSource<Cell, Header>) {
        guard let before = store?.cells else { return }
        var moveSourceOf: [ItemPath: ItemPath] = [:]
        for move in changes.itemMoves { moveSourceOf[move.to] = move.from }
        // Sections no item operation touches keep their cells as they are (most sections of a
        // large list, for a small batch).
        var touchedOld = Set<Int>(), touchedFinal = Set<Int>()
        for path in items.deleted.union(items.reloaded).union(items.reconfigured).union(items.movedFrom) { touchedOld.insert(path.section) }
        for path in items.inserted.union(items.movedTo) { touchedFinal.insert(path.section) }
        var after: [[DisplayedCell]] = []
        after.reserveCapacity(itemCountsAfter.count)
        for final in 0..<itemCountsAfter.count {
            let old = sections.finalToOld[final]
            if old < 0 || sections.reloaded.contains(old) {
                after.append((0..<itemCountsAfter[final]).map {
                    DisplayedCell(content: readCell(at: ItemPath(section: final, item: $0), from: dataSource), isSelected: false)
                })
                continue
            }
            if !touchedOld.contains(old) && !touchedFinal.contains(final) {
                after.append(before[old])
                continue
            }
            // Survivors keep their cell; a reload replaces the cell (selection lost, §4.5), a
            // reconfigure re-reads its content in place.
            var survivors: [(oldIndex: Int, cell: DisplayedCell)] = []
            survivors.reserveCapacity(before[old].count)
            for (index, cell) in before[old].enumerated() {
                let path = ItemPath(section: old, item: index)
                if !items.deleted.contains(path) && !items.movedFrom.contains(path) { survivors.append((index, cell)) }
            }
            var cells: [DisplayedCell] = []
            cells.reserveCapacity(itemCountsAfter[final])
            var nextSurvivor = 0
            for index in 0..<itemCountsAfter[final] {
                let path = ItemPath(section: final, item: index)
                if items.inserted.contains(path) {
                    cells.append(DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false))
                } else if let source = moveSourceOf[path] {
                    cells.append(before[source.section][source.item])
                } else {
                    var (oldIndex, cell) = survivors[nextSurvivor]
                    nextSurvivor += 1
                    let oldPath = ItemPath(section: old, item: oldIndex)
                    if items.reloaded.contains(oldPath) {
                        cell = DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false)
                    } else if items.reconfigured.contains(oldPath) {
                        cell.content = readCell(at: path, from: dataSource)
                    }
                    cells.append(cell)
                }
            }
            after.append(cells)
        }
        store?.cells = after
    }

    /// Only the cells near the viewport held: each follows the batch to its new place (UIKit's
    /// rule, through ``PathMapping``); inserted cells are read when they come into view.
    private func applyToRealizedCells(_ sections: SectionSets, _ items: ItemSets, changes: ListChanges, reconfigures: [ItemPath],
                                      dataSource: any HeadlessListDataSource<Cell, Header>) {
        guard let store else { return }
        let mapping = PathMapping(changes)
        var realized: [ItemPath: DisplayedCell] = [:]
        for (path, cell) in store.realized {
            guard let newPath = mapping.newPath(ofOld: path) else { continue }
            if items.reloaded.contains(path) || sections.reloaded.contains(path.section) {
                continue   // replaced: read again when realized
            }
            var moved = cell
            if items.reconfigured.contains(path) { moved.content = readCell(at: newPath, from: dataSource) }
            realized[newPath] = moved
        }
        var selected = Set<ItemPath>()
        for path in store.selected where !items.reloaded.contains(path) && !sections.reloaded.contains(path.section) {
            if let newPath = mapping.newPath(ofOld: path) { selected.insert(newPath) }
        }
        self.store?.realized = realized
        self.store?.selected = selected
    }
}

/// The set of `elements`, or the violation `duplicate` names for the first one that repeats.
private func uniqueSet<Element: Hashable>(
    _ elements: [Element],
    duplicate: (Element) -> BatchUpdateViolation
) throws(BatchUpdateViolation) -> Set<Element> {
    var set = Set<Element>(minimumCapacity: elements.count)
    for element in elements where !set.insert(element).inserted {
        throw duplicate(element)
    }
    return set
}
