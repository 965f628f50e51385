import ListDiff

/// What a batch must not lose: the selected rows and the visible rows' screen positions, both by
/// identity, recorded before the batch and restored after it.
@usableFromInline
struct BatchContext<RowID: Hashable> {
    @usableFromInline
    var anchors: [(id: RowID, screenOffset: Double)]
    @usableFromInline
    var selected: [RowID]
    /// The rows whose cells the batch replaces (reloads, inserts, reloaded sections), which lose
    /// their selection in UIKit; `nil` for a full reload. Only these are reselected, so that a
    /// row the user deselected while the batch animated stays deselected.
    @usableFromInline var replaced: Set<RowID>?

    @inlinable
    init(anchors: [(id: RowID, screenOffset: Double)], selected: [RowID], replaced: Set<RowID>?) {
        self.anchors = anchors
        self.selected = selected
        self.replaced = replaced
    }
}

extension ListPresenter {
    @inlinable
    func captureContext(on target: any ListTarget) -> BatchContext<Row.ID> {
        let offset = target.scrollOffset
        var anchors: [(id: Row.ID, screenOffset: Double)] = []
        for path in target.visibleItemPaths {
            guard let row = displayed.row(at: path), let top = target.contentTop(of: path) else { continue }
            anchors.append((row.id, top - offset))
        }
        var selected: [Row.ID] = selectionInTransit.map { .item($0) }
        for path in target.selectedItemPaths {
            if let item = displayed.row(at: path)?.item { selected.append(.item(item.id)) }
        }
        deselectedInFlight = []
        return BatchContext(anchors: anchors, selected: selected, replaced: nil)
    }

    /// The rows whose cells `stage` replaces when applied to what is displayed now.
    @inlinable
    func replacedRows(by stage: ChangesetStage<PresentedSection<SectionModel>, Row>, reconfiguring: Bool) -> Set<Row.ID> {
        var replaced = Set<Row.ID>()
        if !reconfiguring {
            for path in stage.changes.itemReloads { if let row = displayed.row(at: path) { replaced.insert(row.id) } }
        }
        for path in stage.changes.itemInserts { if let row = stage.snapshot.row(at: path) { replaced.insert(row.id) } }
        for section in stage.changes.sectionInserts where stage.snapshot.sections.indices.contains(section) {
            replaced.formUnion(stage.snapshot.sections[section].items.map(\.id))
        }
        for section in stage.changes.sectionReloads where displayed.sections.indices.contains(section) {
            replaced.formUnion(displayed.sections[section].items.map(\.id))
        }
        return replaced
    }

    /// Puts the first visible row that survived back where it was on screen, and reselects the
    /// selected rows where they are now. Rows missing now but present in the state the stages lead
    /// to stay selected in transit; the others are reported as dropped.
    @inlinable
    func restore(_ context: BatchContext<Row.ID>, on target: any ListTarget) {
        let wanted = Set(context.anchors.map(\.id)).union(context.selected)
        let positions = displayed.paths(of: wanted)

        if let anchor = context.anchors.first(where: { positions[$0.id] != nil }),
           let path = positions[anchor.id], let top = target.contentTop(of: path) {
            let offset = min(max(0, top - anchor.screenOffset), target.maximumScrollOffset)
            if offset != target.scrollOffset { target.scroll(to: offset, animated: false) }
        }

        var desired = Set<ItemPath>()
        var missing: [Row.ID] = []
        for id in context.selected {
            if case let .item(itemID) = id, deselectedInFlight.contains(itemID) { continue }
            guard let path = positions[id] else {
                missing.append(id)
                continue
            }
            if context.replaced?.contains(id) ?? true { desired.insert(path) }
        }
        // Only lost selections are restored: rows the user selected while the batch animated are
        // not in the context and must stay as they are.
        let current = Set(target.selectedItemPaths)
        for path in desired.subtracting(current) { target.setSelected(true, at: path) }

        let inFinalState = missing.isEmpty ? [:] : stagesTarget.paths(of: Set(missing))
        selectionInTransit = []
        var dropped: [Item.ID] = []
        for id in missing {
            guard case let .item(itemID) = id else { continue }
            if inFinalState[id] != nil { selectionInTransit.append(itemID) } else { dropped.append(itemID) }
        }
        if !dropped.isEmpty { onSelectionDropped?(dropped) }
    }
}

extension ListSnapshot {
    /// The first path of each of `ids` present in the snapshot, in one pass that stops when all
    /// are found.
    @inlinable
    func paths(of ids: Set<Item.ID>) -> [Item.ID: ItemPath] {
        guard !ids.isEmpty else { return [:] }
        var result: [Item.ID: ItemPath] = [:]
        for (sectionIndex, section) in sections.enumerated() {
            for (itemIndex, item) in section.items.enumerated() where ids.contains(item.id) && result[item.id] == nil {
                result[item.id] = ItemPath(section: sectionIndex, item: itemIndex)
                if result.count == ids.count { return result }
            }
        }
        return result
    }
}
