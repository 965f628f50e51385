import ListDiff

extension HeadlessListView {
    /// The selected items, in display order. Selection lives on cells: it follows moves, is kept
    /// by reconfigure and lost by reload, deletion and `reloadData` (§4.5).
    public var selectedItems: [ItemPath] {
        guard let displayed else { return [] }
        var result: [ItemPath] = []
        for section in displayed.indices {
            let cells = displayed[section].cells
            for item in cells.indices where cells[item].isSelected {
                result.append(ItemPath(section: section, item: item))
            }
        }
        return result
    }

    /// Whether the item at `path` is selected (false when there is no such item).
    public func isSelected(_ path: ItemPath) -> Bool {
        guard let displayed, displayed.indices.contains(path.section),
              displayed[path.section].cells.indices.contains(path.item) else { return false }
        return displayed[path.section].cells[path.item].isSelected
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
        let exists = displayed.map { $0.indices.contains(path.section) && $0[path.section].cells.indices.contains(path.item) } ?? false
        guard exists else {
            let sectionCount = displayed?.count ?? 0
            let itemCount = displayed.flatMap { $0.indices.contains(path.section) ? $0[path.section].cells.count : nil }
            throw .itemOutOfRange(operation, path: path, sectionCount: sectionCount, itemCount: itemCount)
        }
        // In place: copying `displayed` first would copy the whole section's cells on every tap.
        displayed?[path.section].cells[path.item].isSelected = isSelected
    }
}
