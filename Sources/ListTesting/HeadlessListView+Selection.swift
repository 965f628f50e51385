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
        guard var sections = displayed, sections.indices.contains(path.section),
              sections[path.section].cells.indices.contains(path.item) else {
            let sectionCount = displayed?.count ?? 0
            let itemCount = displayed.flatMap { $0.indices.contains(path.section) ? $0[path.section].cells.count : nil }
            throw .itemOutOfRange(operation, path: path, sectionCount: sectionCount, itemCount: itemCount)
        }
        sections[path.section].cells[path.item].isSelected = isSelected
        displayed = sections
    }
}

extension HeadlessListView {
    /// Selects or deselects as a user's tap would, without throwing (out-of-range paths are ignored).
    public func setSelectedIgnoringErrors(_ isSelected: Bool, at path: ItemPath) {
        try? (isSelected ? selectItem(at: path) : deselectItem(at: path))
    }
}
