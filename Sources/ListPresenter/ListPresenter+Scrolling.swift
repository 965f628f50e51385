import ListDiff

extension ListPresenter {
    /// Scrolls so that the item `id` is at the top of the viewport — after any update in flight or
    /// pending has landed, at the item's position then. If the item is gone by then, nothing
    /// scrolls and ``onScrollTargetMissing`` is called. A later request replaces an earlier one.
    @inlinable
    public func scrollToItem(id: Item.ID, animated: Bool) {
        pendingScroll = (id, animated)
        advance()
    }

    @inlinable
    func performScroll(to id: Item.ID, animated: Bool, on target: any ListTarget) {
        guard let path = displayed.paths(of: [.item(id)])[.item(id)], let top = target.contentTop(of: path) else {
            _statistics.scrollsDropped += 1
            onScrollTargetMissing?(id)
            advance()
            return
        }
        _statistics.scrollsPerformed += 1
        let offset = min(max(0, top), target.maximumScrollOffset)
        // A scroll to where the view already is animates nothing and never reports an end
        // (uikit-batch-rules.md §4.3): arming the wait then would stall every later update.
        guard offset != target.scrollOffset else {
            advance()
            return
        }
        if animated { _phase = .scrolling }
        target.scroll(to: offset, animated: animated)
        if !animated { advance() }
    }

    /// The identities of the selected items (including any between the stages of a batch).
    public var selectedItemIDs: [Item.ID] {
        guard let target else { return [] }
        let shown = target.selectedItemPaths.compactMap { displayed.row(at: $0)?.item?.id }
        return shown + selectionInTransit
    }

    /// Selects the item `id` if it is displayed; returns whether it is.
    @inlinable
    @discardableResult
    public func selectItem(id: Item.ID) -> Bool {
        guard let target, let path = displayed.paths(of: [.item(id)])[.item(id)] else { return false }
        deselectedInFlight.remove(id)
        target.setSelected(true, at: path)
        return true
    }

    /// Deselects the item `id`.
    @inlinable
    public func deselectItem(id: Item.ID) {
        selectionInTransit.removeAll { $0 == id }
        if phase == .applyingBatch { deselectedInFlight.insert(id) }
        guard let target, let path = displayed.paths(of: [.item(id)])[.item(id)] else { return }
        target.setSelected(false, at: path)
    }
}
