import ListDiff

/// Selection and the scroll anchor across batches, by identity. Everything here costs
/// O(visible + selected + changes · log changes): rows are found through the batch's own
/// changes (``PathMapping``), never by scanning the list.
extension ListPresenter {
    /// The visible rows (the anchor candidates, first visible first) and the selected ones.
    func captureContext(on target: any ListTarget) -> StageContext {
        var context = StageContext()
        context.anchors = captureAnchors(on: target)
        for path in target.selectedItemPaths {
            if let item = displayed.itemIfPresent(at: path)?.item { context.selected.append((path, item.id)) }
        }
        return context
    }

    func captureAnchors(on target: any ListTarget) -> [(path: ItemPath, id: Row.ID, screenOffset: Double)] {
        let offset = target.scrollOffset
        var anchors: [(path: ItemPath, id: Row.ID, screenOffset: Double)] = []
        for path in target.visibleItemPaths {
            guard let row = displayed.itemIfPresent(at: path), let top = target.contentTop(of: path) else { continue }
            anchors.append((path, row.id, top - offset))
        }
        return anchors
    }

    /// Puts the first visible row that survived back where it was on screen.
    func restoreAnchor(_ anchors: [(path: ItemPath, id: Row.ID, screenOffset: Double)], on target: any ListTarget,
                       newPath: (Row.ID) -> ItemPath?) {
        for anchor in anchors {
            guard let path = newPath(anchor.id), let top = target.contentTop(of: path) else { continue }
            let offset = min(max(0, top - anchor.screenOffset), target.maximumScrollOffset)
            if abs(offset - target.scrollOffset) > configuration.offsetTolerance { target.scroll(to: offset, animated: false) }
            return
        }
    }

    /// After a batch: the anchor back in place, and the selection back on rows whose cells the
    /// batch replaced (UIKit keeps it on rows that only moved). Selected rows the batch removed
    /// stay selected in transit until the change ends.
    func restore(_ context: StageContext, after changes: ListChanges, reconfigured: Bool, on target: any ListTarget) {
        let mapping = PathMapping(changes)
        restoreAnchor(context.anchors, on: target) { id in
            // The anchor is found through the changes; its identity confirms it.
            guard let anchor = context.anchors.first(where: { $0.id == id }), let path = mapping.newPath(ofOld: anchor.path),
                  displayed.itemIfPresent(at: path)?.id == id else { return nil }
            return path
        }
        var reloaded = reconfigured ? Set<ItemPath>() : Set(changes.itemReloads)
        var reloadedSections = Set(changes.sectionReloads)
        if !target.keepsCellsOnMove {
            reloaded.formUnion(changes.itemMoves.map(\.from))
            reloadedSections.formUnion(changes.sectionMoves.map(\.from))
        }
        let current = Set(target.selectedItemPaths)
        for (path, id) in context.selected where !context.deselected.contains(id) {
            guard let newPath = mapping.newPath(ofOld: path) else {
                if !selectionInTransit.contains(id) { selectionInTransit.append(id) }
                continue
            }
            let replaced = reloaded.contains(path) || reloadedSections.contains(path.section)
            if replaced && !current.contains(newPath) && displayed.itemIfPresent(at: newPath)?.item?.id == id {
                target.setSelected(true, at: newPath)
            }
        }
        guard !selectionInTransit.isEmpty else { return }
        // Rows in transit come back through the inserts of a later stage.
        var inserted = changes.itemInserts
        for section in changes.sectionInserts where section < displayed.sectionCount {
            for item in 0..<displayed.itemCount(inSection: section) { inserted.append(ItemPath(section: section, item: item)) }
        }
        for path in inserted {
            guard let id = displayed.itemIfPresent(at: path)?.item?.id, let index = selectionInTransit.firstIndex(of: id) else { continue }
            selectionInTransit.remove(at: index)
            if !context.deselected.contains(id) { target.setSelected(true, at: path) }
        }
    }

    /// When a change has landed: selected rows still in transit are either somewhere in the new
    /// model (selected there) or gone (reported); those in `deselected` (during the last stage)
    /// stay unselected.
    func resolveSelectionInTransit(except deselected: Set<Item.ID>, on target: any ListTarget) {
        reselect(selectionInTransit, except: deselected, on: target)
    }

    /// Selects each of `ids` not in `deselected` where it is in the displayed model, and reports
    /// those no longer there; nothing is in transit afterwards.
    func reselect(_ ids: [Item.ID], except deselected: Set<Item.ID> = [], on target: any ListTarget) {
        selectionInTransit = []
        var dropped: [Item.ID] = []
        for id in ids where !deselected.contains(id) {
            if let path = displayed.path(ofItem: .item(id)) { target.setSelected(true, at: path) } else { dropped.append(id) }
        }
        if !dropped.isEmpty { onSelectionDropped?(dropped) }
    }

    /// The identities of the selected items (including any between the stages of a batch).
    public var selectedItemIDs: [Item.ID] {
        guard let target else { return [] }
        return target.selectedItemPaths.compactMap { displayed.itemIfPresent(at: $0)?.item?.id } + selectionInTransit
    }

    /// Selects the item `id` if it is displayed; returns whether it is.
    ///
    /// - Complexity: the model's identity lookup (O(log n) for a live query's newest result).
    @discardableResult
    public func selectItem(id: Item.ID) -> Bool {
        guard let target, let path = displayed.path(ofItem: .item(id)) else { return false }
        updateBatchInFlight { $0.context.deselected.remove(id) }
        target.setSelected(true, at: path)
        return true
    }

    /// Changes the batch in flight, if there is one.
    private func updateBatchInFlight(_ change: (inout Batch) -> Void) {
        guard case var .applying(batch) = state else { return }
        change(&batch)
        state = .applying(batch)
    }

    /// Deselects the item `id`.
    public func deselectItem(id: Item.ID) {
        selectionInTransit.removeAll { $0 == id }
        updateBatchInFlight { $0.context.deselected.insert(id) }
        guard let target, let path = displayed.path(ofItem: .item(id)) else { return }
        target.setSelected(false, at: path)
    }

    /// Scrolls so that the item `id` is at the top of the viewport — after any change in flight or
    /// pending has landed, at the item's position then. If the item is gone by then, nothing
    /// scrolls and ``onScrollTargetMissing`` is called. A later request replaces an earlier one.
    public func scrollToItem(id: Item.ID, animated: Bool) {
        pending.scroll = (id, animated)
        advance()
    }

    func performScroll(to id: Item.ID, animated: Bool, on target: any ListTarget) {
        guard let path = displayed.path(ofItem: .item(id)), let top = target.contentTop(of: path) else {
            statistics.scrollsDropped += 1
            onScrollTargetMissing?(id)
            advance()
            return
        }
        statistics.scrollsPerformed += 1
        let offset = min(max(0, top), target.maximumScrollOffset)
        // A scroll to where the view already is — within a pixel's rounding — animates nothing and
        // never reports an end (docs/UIKIT-BATCH-RULES.md §4.3): waiting for it would stall every update.
        guard abs(offset - target.scrollOffset) > configuration.offsetTolerance else {
            advance()
            return
        }
        if animated {
            nextToken += 1
            state = .scrolling(token: nextToken, timeout: scheduleTimeout(for: nextToken))
        }
        target.scroll(to: offset, animated: animated)
        if !animated { advance() }
    }
}
