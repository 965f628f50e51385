import ListDiff

extension HeadlessListView {
    /// The number of rows of the whole content (headers and items).
    public var contentRows: Int {
        guard let displayed else { return 0 }
        return displayed.reduce(0) { $0 + sectionHeaderRows + $1.cells.count }
    }

    /// The largest valid content offset.
    public var maximumContentOffset: Int { max(0, contentRows - viewportRows) }

    /// The row at which the item at `path` sits, or `nil` if there is no such item.
    public func row(of path: ItemPath) -> Int? {
        guard let displayed, displayed.indices.contains(path.section),
              displayed[path.section].cells.indices.contains(path.item) else { return nil }
        var row = 0
        for section in 0..<path.section { row += sectionHeaderRows + displayed[section].cells.count }
        return row + sectionHeaderRows + path.item
    }

    /// The items whose rows are at least partly in the viewport, in display order.
    public var visibleItems: [ItemPath] {
        guard let displayed else { return [] }
        var result: [ItemPath] = []
        let end = contentOffset + viewportRows
        var row = 0
        for (section, displayedSection) in displayed.enumerated() {
            row += sectionHeaderRows
            let count = displayedSection.cells.count
            if row + count > contentOffset && row < end {
                let first = max(0, contentOffset - row)
                let last = min(count, end - row)
                for item in first..<last { result.append(ItemPath(section: section, item: item)) }
            }
            row += count
            if row >= end { break }
        }
        return result
    }

    /// The first item in the viewport, if any.
    public var firstVisibleItem: ItemPath? { visibleItems.first }

    /// Scrolls so that the item at `path` is the first row of the viewport (as far as the content
    /// allows). Animated scrolls stay in flight until ``finishScrollAnimation()``; a scroll to
    /// where the view already is starts no animation and never calls the end callback (§4.3).
    public func scrollToItem(at path: ItemPath, animated: Bool) throws(BatchUpdateViolation) {
        guard batchDepth == 0 else { throw .scrollDuringBatch }
        layoutIfNeeded()
        guard let row = row(of: path) else {
            let sections = displayed?.count ?? 0
            let items = displayed.flatMap { $0.indices.contains(path.section) ? $0[path.section].cells.count : nil }
            throw .itemOutOfRange(.scroll, path: path, sectionCount: sections, itemCount: items)
        }
        try setContentOffset(row, animated: animated)
    }

    /// Ends the programmatic scroll animation in flight, as the display link would, and calls
    /// ``onScrollAnimationEnded``.
    public func finishScrollAnimation() {
        guard let target = scrollAnimationTarget else { return }
        scrollAnimationTarget = nil
        contentOffset = min(target, maximumContentOffset)
        onScrollAnimationEnded?()
    }

    /// Scrolls to `offset` (clamped to the content). Animated: stays in flight until
    /// ``finishScrollAnimation()`` — unless the view is already there, in which case nothing
    /// animates and the end callback is never called (§4.3).
    public func setContentOffset(_ offset: Int, animated: Bool) throws(BatchUpdateViolation) {
        guard batchDepth == 0 else { throw .scrollDuringBatch }
        layoutIfNeeded()
        let target = max(0, min(offset, maximumContentOffset))
        guard animated else {
            scrollAnimationTarget = nil
            contentOffset = target
            return
        }
        guard target != contentOffset else { return }
        scrollAnimationTarget = target
    }

    /// Sets the content offset directly, as a user's drag would (clamped to the content).
    public func setContentOffset(_ offset: Int) {
        layoutIfNeeded()
        contentOffset = max(0, min(offset, maximumContentOffset))
    }

    /// A batch keeps the offset in rows (§4.1): rows inserted above the viewport push the visible
    /// rows down; only the end of the content limits it.
    func clampContentOffset() {
        contentOffset = max(0, min(contentOffset, maximumContentOffset))
    }
}
