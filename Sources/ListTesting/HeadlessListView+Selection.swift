import ListDiff

extension HeadlessListView {
    /// The selected items, in display order. Selection follows moves, is kept by reconfigure and
    /// lost by reload, deletion and `reloadData` (§4.5).
    ///
    /// - Complexity: O(n) when every cell is held (selection lives on cells), O(s log s) for s
    ///   selected items otherwise.
    public var selectedItems: [ItemPath] {
        guard let store else { return [] }
        guard let cells = store.cells else { return store.selected.sorted() }
        var result: [ItemPath] = []
        for section in cells.indices {
            for item in cells[section].indices where cells[section][item].isSelected {
                result.append(ItemPath(section: section, item: item))
            }
        }
        return result
    }

    /// Whether the item at `path` is selected (false when there is no such item).
    public func isSelected(_ path: ItemPath) -> Bool {
        guard let store, contains(path) else { return false }
        guard let cells = store.cells else { return store.selected.contains(path) }
        return cells[path.section][path.item].isSelected
    }

    /// Selects the item at `path`.
    public func selectItem(at path: ItemPath) throws(BatchUpdateViolation) {
        try setSelected(true, at: path, operation: .select)
    }

    /// Deselects the item at `path`.
    public func deselectItem(at path: ItemPath) throws(BatchUpdateViolation) {
        try setSelected(false, at: path, operation: .select)
    }

    private func setSelected(_ isSelected: Bool, at path: ItemPath, operation: BatchUpdateViolation.Operation) throws(BatchUpdateViolation) {
        layoutIfNeeded()
        guard contains(path) else {
            let sectionCount = store?.counts.count ?? 0
            let itemCount = store.flatMap { $0.counts.indices.contains(path.section) ? $0.counts[path.section] : nil }
            throw .itemOutOfRange(operation, path: path, sectionCount: sectionCount, itemCount: itemCount)
        }
        if store?.cells != nil {
            // In place: copying the cells first would copy the whole section on every tap.
            store?.cells?[path.section][path.item].isSelected = isSelected
        } else if isSelected {
            store?.selected.insert(path)
        } else {
            store?.selected.remove(path)
        }
    }
}
