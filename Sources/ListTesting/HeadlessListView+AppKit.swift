import ListDiff

extension HeadlessListView {
    /// A slot of the state a sequential batch builds: an old cell (marked when it is to be
    /// re-read), or a new one read at the end.
    struct Slot {
        var cell: DisplayedCell?
        var reread = false
        var keepsSelection = false
    }

    /// `NSCollectionView`'s semantics: the batch's item and section deletes (indices before the
    /// batch), then its section and item inserts (indices in the state the inserts lead to), then
    /// its section and item moves one after another (each in the state left by the operations
    /// before it). Reloads and reconfigures name indices before the batch. The counts the data
    /// source reports afterwards must be those the operations lead to.
    func commitSequentially(_ batch: PendingBatch, dataSource: any HeadlessListDataSource<Cell, Header>) throws(BatchUpdateViolation) {
        layoutIfNeeded()
        guard let before = store, let beforeCells = before.cells else {
            // Only every-cell realization models AppKit; a visible-only view follows UIKit's rules.
            try commit(batch, dataSource: dataSource)
            return
        }
        var state = SequentialState(sections: zip(before.headers, beforeCells).map { header, cells in
            (header, cells.map { Slot(cell: $0) })
        })
        try state.markRereads(batch.changes, reconfigures: batch.itemReconfigures)
        try state.delete(batch.changes)
        try state.insert(batch.changes)
        try state.move(batch.changes)
        store = try read(state, from: dataSource)
        clampContentOffset()
    }

    /// The cells after a sequential batch: the slots the operations led to, checked against the
    /// data source's counts, with new, reloaded and re-read cells read from it.
    private func read(_ state: SequentialState, from dataSource: any HeadlessListDataSource<Cell, Header>) throws(BatchUpdateViolation) -> Store {
        let sectionsAfter = dataSource.numberOfSections()
        guard sectionsAfter == state.sections.count else {
            throw .sequentialCountMismatch(section: nil, expected: state.sections.count, actual: sectionsAfter)
        }
        var headers: [Header] = []
        var cells: [[DisplayedCell]] = []
        for (index, section) in state.sections.enumerated() {
            let count = dataSource.numberOfItems(inSection: index)
            let whole = section.header == nil
            guard whole || count == section.slots.count else {
                throw .sequentialCountMismatch(section: index, expected: section.slots.count, actual: count)
            }
            headers.append(section.header ?? dataSource.header(forSection: index))
            if whole {
                cells.append((0..<count).map { DisplayedCell(content: readCell(at: ItemPath(section: index, item: $0), from: dataSource), isSelected: false) })
                continue
            }
            cells.append(section.slots.enumerated().map { item, slot in
                let path = ItemPath(section: index, item: item)
                guard var cell = slot.cell else { return DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false) }
                if slot.reread {
                    cell.content = readCell(at: path, from: dataSource)
                    if !slot.keepsSelection { cell.isSelected = false }
                }
                return cell
            })
        }
        return Store(headers: headers, counts: cells.map(\.count), cells: cells)
    }

    /// The sections of a sequential batch as its operations reshape them, one step at a time. A
    /// section whose header is `nil` is read again whole at the end (inserted or reloaded).
    struct SequentialState {
        var sections: [(header: Header?, slots: [Slot])]

        private func checkOld(_ path: ItemPath, _ operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
            guard sections.indices.contains(path.section) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.count, itemCount: nil)
            }
            guard sections[path.section].slots.indices.contains(path.item) else {
                throw .itemOutOfRange(operation, path: path, sectionCount: sections.count, itemCount: sections[path.section].slots.count)
            }
        }

        /// Reloads and reconfigures, on the state before the batch.
        mutating func markRereads(_ changes: ListChanges, reconfigures: [ItemPath]) throws(BatchUpdateViolation) {
            let deletedItems = Set(changes.itemDeletes)
            for path in changes.itemReloads {
                try checkOld(path, .reload)
                if deletedItems.contains(path) { throw .itemDeletedAndReloaded(path) }
                sections[path.section].slots[path.item].reread = true
            }
            for path in reconfigures {
                try checkOld(path, .reconfigure)
                sections[path.section].slots[path.item].reread = true
                sections[path.section].slots[path.item].keepsSelection = true
            }
            for section in changes.sectionReloads {
                guard sections.indices.contains(section) else { throw .sectionOutOfRange(.reload, section: section, count: sections.count) }
                sections[section] = (nil, [])
            }
        }

        /// Deletes: items, then sections, on the state before the batch.
        mutating func delete(_ changes: ListChanges) throws(BatchUpdateViolation) {
            var seen = Set<ItemPath>()
            for path in changes.itemDeletes.sorted(by: >) {
                try checkOld(path, .delete)
                guard seen.insert(path).inserted else { throw .duplicateItemOperation(.delete, path) }
                sections[path.section].slots.remove(at: path.item)
            }
            let deletedSections = changes.sectionDeletes.sorted(by: >)
            guard Set(deletedSections).count == deletedSections.count else {
                throw .duplicateSectionOperation(.delete, section: deletedSections.first ?? 0)
            }
            for section in deletedSections {
                guard sections.indices.contains(section) else { throw .sectionOutOfRange(.delete, section: section, count: sections.count) }
                sections.remove(at: section)
            }
        }

        /// Inserts: sections, then items, at their indices in the state they lead to.
        mutating func insert(_ changes: ListChanges) throws(BatchUpdateViolation) {
            for section in changes.sectionInserts.sorted() {
                guard section <= sections.count else { throw .sectionOutOfRange(.insert, section: section, count: sections.count) }
                sections.insert((nil, []), at: section)
            }
            for path in changes.itemInserts.sorted() {
                guard sections.indices.contains(path.section) else {
                    throw .itemOutOfRange(.insert, path: path, sectionCount: sections.count, itemCount: nil)
                }
                guard path.item <= sections[path.section].slots.count else {
                    throw .itemOutOfRange(.insert, path: path, sectionCount: sections.count, itemCount: sections[path.section].slots.count)
                }
                sections[path.section].slots.insert(Slot(cell: nil), at: path.item)
            }
        }

        /// Moves, sections then items, one after another.
        mutating func move(_ changes: ListChanges) throws(BatchUpdateViolation) {
            for move in changes.sectionMoves {
                guard sections.indices.contains(move.from) else { throw .sectionOutOfRange(.moveSource, section: move.from, count: sections.count) }
                let section = sections.remove(at: move.from)
                guard move.to <= sections.count else { throw .sectionOutOfRange(.moveDestination, section: move.to, count: sections.count + 1) }
                sections.insert(section, at: move.to)
            }
            for move in changes.itemMoves {
                try checkOld(move.from, .moveSource)
                let slot = sections[move.from.section].slots.remove(at: move.from.item)
                guard sections.indices.contains(move.to.section), move.to.item <= sections[move.to.section].slots.count else {
                    throw .itemOutOfRange(.moveDestination, path: move.to, sectionCount: sections.count,
                                          itemCount: sections.indices.contains(move.to.section) ? sections[move.to.section].slots.count : nil)
                }
                sections[move.to.section].slots.insert(slot, at: move.to.item)
            }
        }
    }
}
