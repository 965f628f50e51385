import ListDiff

extension ListPresenter {
    /// The displayed form of the model: its sections and rows, plus a status section on top for
    /// the list's load state and a trailing row in each section for the section's.
    ///
    /// Rules: the list shows a loading or error row while loading or failed (above any rows it
    /// still has), and an empty row when it has no rows at all; a section shows a loading or
    /// error row after its rows, and an empty row when it has none and is loaded or empty.
    @inlinable
    func compose() -> Displayed {
        var sections: [SnapshotSection<PresentedSection<SectionModel>, Row>] = []
        sections.reserveCapacity(model.sections.count + 1)
        let isEmpty = model.sections.allSatisfy(\.items.isEmpty)
        if let block = listBlock(isEmpty: isEmpty) {
            sections.append(SnapshotSection(.listStatus, items: [.block(block)]))
        }
        for section in model.sections {
            var rows = section.items.map(Row.item)
            if let block = sectionBlock(for: section.model.id, isEmpty: rows.isEmpty) { rows.append(.block(block)) }
            sections.append(SnapshotSection(.section(section.model), items: rows))
        }
        return Displayed(sections: sections)
    }

    @inlinable
    func listBlock(isEmpty: Bool) -> StateBlock<SectionModel.ID>? {
        block(for: listState, scope: .list, isEmpty: isEmpty)
    }

    @inlinable
    func sectionBlock(for id: SectionModel.ID, isEmpty: Bool) -> StateBlock<SectionModel.ID>? {
        guard let state = sectionStates[id] else { return nil }
        return block(for: state, scope: .section(id), isEmpty: isEmpty)
    }

    @inlinable
    func block(for state: LoadState, scope: StateBlock<SectionModel.ID>.Scope, isEmpty: Bool)
        -> StateBlock<SectionModel.ID>?
    {
        switch state {
        case .loading:
            return StateBlock(scope: scope, kind: .loading)
        case let .failed(failure):
            return StateBlock(scope: scope, kind: .failed, message: failure.message, retry: failure.retry)
        case .loaded, .empty:
            return isEmpty ? StateBlock(scope: scope, kind: .empty) : nil
        }
    }
}
