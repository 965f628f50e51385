import ListDiff

extension HeadlessListView {
    /// The number of rows of the whole content (headers and items).
    public var contentRows: Int {
        guard let store else { return 0 }
        return store.counts.reduce(0) { $0 + sectionHeaderRows + $1 }
    }

    /// The largest valid content offset.
    public var maximumContentOffset: Int { max(0, contentRows - viewportRows) }

    /// The row at which the item at `path` sits, or `nil` if there is no such item.
    public func row(of path: ItemPath) -> Int? {
        guard contains(path), let store else { return nil }
        var row = 0
        for section in 0..<path.section { row += sectionHeaderRows + store.counts[section] }
        return row + sectionHeaderRows + path.item
    }

    /// The items whose rows are at least partly in `rows`, in display order.
    func items(inRows rows: Range<Int>) -> [ItemPath] {
        guard let store, !rows.isEmpty else { return [] }
        var result: [ItemPath] = []
        var row = 0
        for (section, count) in store.counts.enumerated() {
            row += sectionHeaderRows
            if row + count > rows.lowerBound && row < rows.upperBound {
                let first = max(0, rows.lowerBound - row)
                let last = min(count, rows.upperBound - row)
                for item in first..<last { result.append(ItemPath(section: section, item: item)) }
            }
            row += count
            if row >= rows.upperBound { break }
        }
        return result
    }

    /// The items whose rows are at least partly in the viewport, in display order.
    public var visibleItems: [ItemPath] {
        items(inRows: contentOffset..<(contentOffset + viewportRows))
    }

    /// A row of the content: a section's header or an item.
    public enum ContentRow: Hashable, Sendable {
        case header(section: Int)
        case item(ItemPath)
    }

    /// The rows in the viewport, headers included, in display order — what a terminal or any
    /// row-based screen draws.
    ///
    /// - Complexity: O(s + v) for s sections and v rows in the viewport.
    public var visibleRows: [ContentRow] {
        guard let store else { return [] }
        let first = contentOffset, last = contentOffset + viewportRows
        var result: [ContentRow] = []
        var row = 0
        for (section, count) in store.counts.enumerated() {
            if row >= last { break }
            for _ in 0..<sectionHeaderRows {
                if row >= first && row < last { result.append(.header(section: section)) }
                row += 1
            }
            if row + count > first && row < last {
                for item in max(0, first - row)..<min(count, last - row) { result.append(.item(ItemPath(section: section, item: item))) }
            }
            row += count
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
            let sections = store?.counts.count ?? 0
            let items = store.flatMap { $0.counts.indices.contains(path.section) ? $0.counts[path.section] : nil }
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
        realizeVisibleCells()
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
            realizeVisibleCells()
            return
        }
        guard target != contentOffset else { return }
        scrollAnimationTarget = target
    }

    /// Sets the content offset directly, as a user's drag would (clamped to the content).
    public func setContentOffset(_ offset: Int) {
        layoutIfNeeded()
        contentOffset = max(0, min(offset, maximumContentOffset))
        realizeVisibleCells()
    }

    /// A batch keeps the offset in rows (§4.1): rows inserted above the viewport push the visible
    /// rows down; only the end of the content limits it.
    func clampContentOffset() {
        contentOffset = max(0, min(contentOffset, maximumContentOffset))
    }
}
