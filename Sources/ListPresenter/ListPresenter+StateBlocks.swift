import ListDiff

extension ListPresenter {
    /// The state rows `model` calls for. Rules: the list shows a loading or error row while
    /// loading or failed (above any rows it still has), and an empty row when it has no rows at
    /// all; a section with a state shows a loading or error row after its rows, and an empty row
    /// when it has none and is loaded or empty.
    ///
    /// - Complexity: O(s log n) for s sections with a state; the model's rows are not visited.
    func desiredBlocks(for model: Model) -> BlockLayout<SectionModel> {
        var layout = BlockLayout<SectionModel>()
        layout.list = block(for: listState, scope: .list, isEmpty: { model.itemCount == 0 })
        for (id, state) in sectionStates {
            guard let index = model.index(ofSection: id) else { continue }
            layout.sections[id] = block(for: state, scope: .section(id), isEmpty: { model.itemCount(inSection: index) == 0 })
        }
        return layout
    }

    private func block(for state: LoadState, scope: StateBlock<SectionModel.ID>.Scope, isEmpty: () -> Bool) -> StateBlock<SectionModel.ID>? {
        switch state {
        case .loading:
            return StateBlock(scope: scope, kind: .loading)
        case let .failed(failure):
            return StateBlock(scope: scope, kind: .failed, message: failure.message, retry: failure.retry)
        case .loaded, .empty:
            return isEmpty() ? StateBlock(scope: scope, kind: .empty) : nil
        }
    }

    /// Brings the state rows on display to what the model and the load states call for, in one
    /// batch of their own: the model's rows are not touched.
    func reconcileBlocks(on target: any ListTarget) {
        let old = displayed.blocks
        let new = desiredBlocks(for: shownModel)
        var changes = ListChanges()
        switch (old.list, new.list) {
        case (nil, _?): changes.sectionInserts.append(0)
        case (_?, nil): changes.sectionDeletes.append(0)
        case let (before?, after?): Self.compare(before, after, old: ItemPath(section: 0, item: 0), new: ItemPath(section: 0, item: 0), into: &changes)
        case (nil, nil): break
        }
        for id in Set(old.sections.keys).union(new.sections.keys) {
            guard let index = shownModel.index(ofSection: id) else { continue }
            let row = shownModel.itemCount(inSection: index)
            let oldPath = ItemPath(section: index + old.sectionOffset, item: row)
            let newPath = ItemPath(section: index + new.sectionOffset, item: row)
            switch (old.sections[id], new.sections[id]) {
            case (nil, _?): changes.itemInserts.append(newPath)
            case (_?, nil): changes.itemDeletes.append(oldPath)
            case let (before?, after?): Self.compare(before, after, old: oldPath, new: newPath, into: &changes)
            case (nil, nil): break
            }
        }
        let next = PresentedList(model: shownModel, blocks: new)
        guard !changes.isEmpty else {
            displayed = next   // same rows; the newest retry closures
            advance()
            return
        }
        run([PresentedStage(changes: changes, displayed: next, reconfigures: false)], finalModel: nil, on: target)
    }

    /// A block that changes kind is another row (its identity is its kind); one that changes
    /// message is the same row, reloaded.
    private static func compare(_ before: StateBlock<SectionModel.ID>, _ after: StateBlock<SectionModel.ID>,
                                old: ItemPath, new: ItemPath, into changes: inout ListChanges) {
        if before.kind != after.kind {
            changes.itemDeletes.append(old)
            changes.itemInserts.append(new)
        } else if before.message != after.message {
            changes.itemReloads.append(old)
        }
    }
}
