import ListDiff

extension HeadlessListView {
    /// The displayed cells and headers whose content differs from what the data source shows now:
    /// a cell that was not reloaded after its row changed, or that sits at the wrong place.
    /// Also reports a count that differs, as a path one past the shorter side.
    public func staleCells(
        cellsEqual: (Cell, Cell) -> Bool,
        headersEqual: (Header, Header) -> Bool
    ) -> [ItemPath] {
        guard let dataSource, let store else { return [] }
        var stale: [ItemPath] = []
        let sectionCount = dataSource.numberOfSections()
        if sectionCount != store.counts.count {
            stale.append(ItemPath(section: min(sectionCount, store.counts.count), item: -1))
        }
        for section in 0..<min(sectionCount, store.counts.count) {
            if !headersEqual(store.headers[section], dataSource.header(forSection: section)) {
                stale.append(ItemPath(section: section, item: -1))
            }
            let count = dataSource.numberOfItems(inSection: section)
            if count != store.counts[section] { stale.append(ItemPath(section: section, item: min(count, store.counts[section]))) }
            guard let cells = store.cells else { continue }
            for item in 0..<min(count, cells[section].count) {
                let path = ItemPath(section: section, item: item)
                if !cellsEqual(cells[section][item].content, dataSource.cell(at: path)) { stale.append(path) }
            }
        }
        if store.cells == nil {
            // Only the cells held can be wrong; the others are read when they come into view.
            for (path, cell) in store.realized.sorted(by: { $0.key < $1.key })
            where path.section < sectionCount && path.item < dataSource.numberOfItems(inSection: path.section) {
                if !cellsEqual(cell.content, dataSource.cell(at: path)) { stale.append(path) }
            }
        }
        return stale
    }
}

extension HeadlessListView where Cell: ListElement, Header: ListElement {
    /// Applies every stage of `changeset`, one batch each: inside each batch the data source is
    /// switched to the stage's snapshot first, then the stage's changes are recorded — the order
    /// a real data source must follow (§3.1).
    public func apply(
        _ changeset: Changeset<Header, Cell>,
        to dataSource: SnapshotDataSource<Header, Cell>
    ) throws(BatchUpdateViolation) {
        for stage in changeset.stages {
            try performBatchUpdates { () throws(BatchUpdateViolation) in
                dataSource.snapshot = stage.snapshot
                try apply(stage.changes)
            }
        }
    }

    /// The displayed cells and headers that do not show the same identity and content as the data
    /// source; empty when the view is exactly in sync.
    public func staleCells() -> [ItemPath] {
        staleCells(
            cellsEqual: { $0.id == $1.id && $0.isContentEqual(to: $1) },
            headersEqual: { $0.id == $1.id && $0.isContentEqual(to: $1) }
        )
    }
}
