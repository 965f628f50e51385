import ListDiff

extension HeadlessListView {
    /// Checks `batch` against the rules and, when it passes, moves the displayed cells to the state
    /// after it, reading new and reloaded cells from the data source (uikit-batch-rules.md §1.4).
    func commit(_ batch: PendingBatch, dataSource: any HeadlessListDataSource<Cell, Header>) throws(BatchUpdateViolation) {
        let before = displayed ?? []
        let changes = batch.changes
        let sectionsBefore = before.count
        let sectionsAfter = dataSource.numberOfSections()

        // Sections: ranges, duplicates, conflicts, count (§2.1, §2.3–§2.8).
        for section in changes.sectionDeletes where !(0..<sectionsBefore).contains(section) {
            throw .sectionOutOfRange(.delete, section: section, count: sectionsBefore)
        }
        for section in changes.sectionReloads where !(0..<sectionsBefore).contains(section) {
            throw .sectionOutOfRange(.reload, section: section, count: sectionsBefore)
        }
        for move in changes.sectionMoves where !(0..<sectionsBefore).contains(move.from) {
            throw .sectionOutOfRange(.moveSource, section: move.from, count: sectionsBefore)
        }
        for section in changes.sectionInserts where !(0..<sectionsAfter).contains(section) {
            throw .sectionOutOfRange(.insert, section: section, count: sectionsAfter)
        }
        for move in changes.sectionMoves where !(0..<sectionsAfter).contains(move.to) {
            throw .sectionOutOfRange(.moveDestination, section: move.to, count: sectionsAfter)
        }
        let deletedSections = try uniqueSet(changes.sectionDeletes) { .duplicateSectionOperation(.delete, section: $0) }
        let insertedSections = try uniqueSet(changes.sectionInserts) { .duplicateSectionOperation(.insert, section: $0) }
        let reloadedSections = try uniqueSet(changes.sectionReloads) { .duplicateSectionOperation(.reload, section: $0) }
        let movedFromSections = try uniqueSet(changes.sectionMoves.map(\.from)) { .duplicateSectionOperation(.moveSource, section: $0) }
        let movedToSections = try uniqueSet(changes.sectionMoves.map(\.to)) { .duplicateSectionOperation(.moveDestination, section: $0) }
        if let section = deletedSections.intersection(movedFromSections).min() { throw .sectionDeletedAndMoved(section) }
        if let section = deletedSections.intersection(reloadedSections).min() { throw .sectionDeletedAndReloaded(section) }
        if let section = reloadedSections.intersection(movedFromSections).min() { throw .sectionReloadedAndMoved(section) }
        if let section = insertedSections.intersection(movedToSections).min() { throw .sectionInsertedAndMovedTo(section) }
        guard sectionsAfter == sectionsBefore + insertedSections.count - deletedSections.count else {
            throw .sectionCountMismatch(before: sectionsBefore, after: sectionsAfter, inserted: insertedSections.count, deleted: deletedSections.count)
        }

        // Where each old section ends up: inserts and move destinations take their slots, the
        // untouched survivors (reloaded ones included) fill the rest in their old order.
        var finalToOld = [Int](repeating: -1, count: sectionsAfter)
        for move in changes.sectionMoves { finalToOld[move.to] = move.from }
        var freeSlot = 0
        for section in 0..<sectionsBefore where !deletedSections.contains(section) && !movedFromSections.contains(section) {
            while insertedSections.contains(freeSlot) || movedToSections.contains(freeSlot) { freeSlot += 1 }
            finalToOld[freeSlot] = section
            freeSlot += 1
        }
        var oldToFinal = [Int](repeating: -1, count: sectionsBefore)
        for (final, old) in finalToOld.enumerated() where old >= 0 { oldToFinal[old] = final }
        let reloadedFinal = Set(reloadedSections.map { oldToFinal[$0] })
        let itemCountsAfter = (0..<sectionsAfter).map { dataSource.numberOfItems(inSection: $0) }

        // Items: ranges and the section-level rules (§2.3, §2.10, §2.11).
        func checkOld(_ path: ItemPath, _ operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
            guard (0..<sectionsBefore).contains(path.section) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sectionsBefore, itemCount: nil)
            }
            let count = before[path.section].cells.count
            guard (0..<count).contains(path.item) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sectionsBefore, itemCount: count)
            }
            if movedFromSections.contains(path.section) || reloadedSections.contains(path.section) {
                throw .itemOperationInMovedOrReloadedSection(operation, path)
            }
        }
        func checkNew(_ path: ItemPath, _ operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
            guard (0..<sectionsAfter).contains(path.section) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sectionsAfter, itemCount: nil)
            }
            let count = itemCountsAfter[path.section]
            guard (0..<count).contains(path.item) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sectionsAfter, itemCount: count)
            }
            if movedToSections.contains(path.section) || reloadedFinal.contains(path.section) {
                throw .itemOperationInMovedOrReloadedSection(operation, path)
            }
        }
        var itemDeletes: [ItemPath] = []
        for path in changes.itemDeletes {
            try checkOld(path, .delete)
            // Deleting items of a deleted section is tolerated and ignored (§2.10).
            if !deletedSections.contains(path.section) { itemDeletes.append(path) }
        }
        for path in changes.itemReloads {
            try checkOld(path, .reload)
            if deletedSections.contains(path.section) { throw .itemOperationInDeletedSection(.reload, path) }
        }
        for path in batch.itemReconfigures {
            try checkOld(path, .reconfigure)
            if deletedSections.contains(path.section) { throw .itemOperationInDeletedSection(.reconfigure, path) }
        }
        for move in changes.itemMoves {
            try checkOld(move.from, .moveSource)
            if deletedSections.contains(move.from.section) { throw .moveOutOfDeletedSection(move.from) }
            try checkNew(move.to, .moveDestination)
            if insertedSections.contains(move.to.section) { throw .moveIntoInsertedSection(move.to) }
        }
        var itemInserts: [ItemPath] = []
        for path in changes.itemInserts {
            try checkNew(path, .insert)
            if insertedSections.contains(path.section) {
                if isStrict { throw .insertIntoInsertedSection(path) }
                warnings.append(.insertIntoInsertedSection(path))
            } else {
                itemInserts.append(path)
            }
        }

        // Items: duplicates and conflicts (§2.4–§2.9).
        let deleted = try uniqueSet(itemDeletes) { .duplicateItemOperation(.delete, $0) }
        let inserted = try uniqueSet(itemInserts) { .duplicateItemOperation(.insert, $0) }
        let reloaded = try uniqueSet(changes.itemReloads) { .duplicateItemOperation(.reload, $0) }
        let reconfigured = try uniqueSet(batch.itemReconfigures) { .duplicateItemOperation(.reconfigure, $0) }
        let movedFrom = try uniqueSet(changes.itemMoves.map(\.from)) { .duplicateItemOperation(.moveSource, $0) }
        let movedTo = try uniqueSet(changes.itemMoves.map(\.to)) { .duplicateItemOperation(.moveDestination, $0) }
        if let path = deleted.intersection(movedFrom).min() { throw .itemDeletedAndMoved(path) }
        if let path = inserted.intersection(movedTo).min() { throw .itemInsertedAndMovedTo(path) }
        if let path = deleted.intersection(reloaded.union(reconfigured)).min() { throw .itemDeletedAndReloaded(path) }
        if let path = movedFrom.intersection(reloaded.union(reconfigured)).min() { throw .itemReloadedAndMoved(path) }

        // Item counts of the sections that exist before and after (§2.2).
        var insertedPerSection = [Int](repeating: 0, count: sectionsAfter)
        var movedInPerSection = [Int](repeating: 0, count: sectionsAfter)
        var deletedPerSection = [Int](repeating: 0, count: sectionsBefore)
        var movedOutPerSection = [Int](repeating: 0, count: sectionsBefore)
        for path in inserted { insertedPerSection[path.section] += 1 }
        for path in movedTo { movedInPerSection[path.section] += 1 }
        for path in deleted { deletedPerSection[path.section] += 1 }
        for path in movedFrom { movedOutPerSection[path.section] += 1 }
        for final in 0..<sectionsAfter {
            let old = finalToOld[final]
            guard old >= 0, !reloadedSections.contains(old) else { continue }
            let expected = before[old].cells.count + insertedPerSection[final] - deletedPerSection[old]
                + movedInPerSection[final] - movedOutPerSection[old]
            guard itemCountsAfter[final] == expected else {
                throw .itemCountMismatch(
                    section: final, before: before[old].cells.count, after: itemCountsAfter[final],
                    inserted: insertedPerSection[final], deleted: deletedPerSection[old],
                    movedIn: movedInPerSection[final], movedOut: movedOutPerSection[old])
            }
        }

        // The batch is valid: build the state after it.
        var moveSourceOf: [ItemPath: ItemPath] = [:]
        for move in changes.itemMoves { moveSourceOf[move.to] = move.from }
        // Sections no item operation touches keep their cells as they are (most sections of a
        // large list, for a small batch).
        var touchedOld = Set<Int>(), touchedFinal = Set<Int>()
        for path in deleted.union(reloaded).union(reconfigured).union(movedFrom) { touchedOld.insert(path.section) }
        for path in inserted.union(movedTo) { touchedFinal.insert(path.section) }
        var after: [DisplayedSection] = []
        after.reserveCapacity(sectionsAfter)
        for final in 0..<sectionsAfter {
            let old = finalToOld[final]
            if old < 0 || reloadedSections.contains(old) {
                after.append(readSection(final, from: dataSource))
                continue
            }
            if !touchedOld.contains(old) && !touchedFinal.contains(final) {
                after.append(before[old])
                continue
            }
            // Survivors keep their cell; a reload replaces the cell (selection lost, §4.5), a
            // reconfigure re-reads its content in place.
            var survivors: [(oldIndex: Int, cell: DisplayedCell)] = []
            survivors.reserveCapacity(before[old].cells.count)
            for (index, cell) in before[old].cells.enumerated() {
                let path = ItemPath(section: old, item: index)
                if !deleted.contains(path) && !movedFrom.contains(path) { survivors.append((index, cell)) }
            }
            var cells: [DisplayedCell] = []
            cells.reserveCapacity(itemCountsAfter[final])
            var nextSurvivor = 0
            for index in 0..<itemCountsAfter[final] {
                let path = ItemPath(section: final, item: index)
                if inserted.contains(path) {
                    cells.append(DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false))
                } else if let source = moveSourceOf[path] {
                    cells.append(before[source.section].cells[source.item])
                } else {
                    var (oldIndex, cell) = survivors[nextSurvivor]
                    nextSurvivor += 1
                    let oldPath = ItemPath(section: old, item: oldIndex)
                    if reloaded.contains(oldPath) {
                        cell = DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false)
                    } else if reconfigured.contains(oldPath) {
                        cell.content = readCell(at: path, from: dataSource)
                    }
                    cells.append(cell)
                }
            }
            after.append(DisplayedSection(header: before[old].header, cells: cells))
        }
        displayed = after
        clampContentOffset()
    }

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
}
