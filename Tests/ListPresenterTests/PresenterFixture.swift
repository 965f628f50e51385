import ListDiff
import ListPresenter
import ListTesting

typealias Row = VersionedItem<Int, Int>
typealias Day = VersionedItem<Int, Int>
typealias Model = ListSnapshot<Day, Row>
typealias Presenter = ListPresenter<Day, Row>
typealias View = HeadlessListView<PresentedRow<Day, Row>, PresentedSection<Day>>

/// A presenter driving a strict headless view whose batch and scroll animations wait for the
/// test to finish them, so updates can arrive while something is in flight.
@MainActor
final class PresenterFixture {
    let presenter: Presenter
    let view: View
    let dataSource: PresenterDataSource<Day, Row>
    var droppedSelection: [Int] = []
    var missingScrollTargets: [Int] = []

    init(_ model: Model, viewportRows: Int = 5, animated: Bool = true, configuration: Presenter.Configuration = .init(),
         kind: View.Kind = .collectionView, realization: View.Realization = .all) {
        presenter = Presenter(configuration: configuration)
        presenter.update(model)
        (view, dataSource) = presenter.attachHeadlessView(kind: kind, realization: realization, viewportRows: viewportRows)
        view.layoutIfNeeded()
        view.completesBatchAnimationsImmediately = !animated
        presenter.onSelectionDropped = { [unowned self] in droppedSelection += $0 }
        presenter.onScrollTargetMissing = { [unowned self] in missingScrollTargets.append($0) }
    }

    /// Finishes animations until nothing is in flight.
    func settle() {
        for _ in 0..<1_000 {
            if view.isAnimatingBatch { view.finishBatchAnimations(); continue }
            if view.isScrollAnimating { view.finishScrollAnimation(); continue }
            break
        }
    }

    /// Item identities in display order.
    var displayedIDs: [Int] {
        presenter.displayed.materialized().sections.flatMap { $0.items.compactMap(\.item?.id) }
    }

    var visibleIDs: [Int] {
        view.visibleItems.compactMap { view.cellContent(at: $0)?.item?.id }
    }

    /// The selected rows' identities: the view's selected paths, read through what the presenter
    /// displays (a view holding only the cells near its viewport has no cell for most of them).
    var selectedIDs: [Int] {
        view.selectedItems.compactMap { presenter.displayed.itemIfPresent(at: $0)?.item?.id }
    }

    func path(of id: Int) -> ItemPath? {
        for (s, section) in presenter.displayed.materialized().sections.enumerated() {
            if let i = section.items.firstIndex(where: { $0.item?.id == id }) { return ItemPath(section: s, item: i) }
        }
        return nil
    }

    /// The screen position (row within the viewport) of the item `id`.
    func screenRow(of id: Int) -> Int? {
        path(of: id).flatMap { view.row(of: $0) }.map { $0 - view.contentOffset }
    }

    /// The item identities the view's own cells show, in display order (every cell held).
    var viewItemIDs: [Int] {
        var ids: [Int] = []
        for section in 0..<view.numberOfSections() {
            for item in 0..<view.numberOfItems(inSection: section) {
                if let id = view.cellContent(at: ItemPath(section: section, item: item))?.item?.id { ids.append(id) }
            }
        }
        return ids
    }

    /// Whether the view shows exactly the presenter's latest model — read from the view's cells
    /// and compared with the model the presenter was given, not with what it displays — with no
    /// violation and no stale cell.
    var isConsistent: Bool {
        let modelIDs = presenter.model.snapshot.sections.flatMap { $0.items.map(\.id) }
        let cellsAgree = view.realization != .all || viewItemIDs == modelIDs
        return view.violations.isEmpty && view.staleCells().isEmpty && cellsAgree
    }
}

func flat(_ ids: [Int], version: (Int) -> Int = { _ in 0 }) -> Model {
    Model(sections: [SnapshotSection(Day(id: 0), items: ids.map { Row(id: $0, version: version($0)) })])
}

func sectioned(_ sections: [(Int, [Int])]) -> Model {
    Model(sections: sections.map { SnapshotSection(Day(id: $0.0), items: $0.1.map { Row(id: $0) }) })
}


/// A snapshot that names its state, as a live query's results do, so that changesets between
/// such lists take the presenter's direct path.
struct VersionedList: SectionedList {
    let snapshot: Model
    let generation: UInt64

    var sectionCount: Int { snapshot.sections.count }
    func itemCount(inSection section: Int) -> Int { snapshot.sections[section].items.count }
    func section(at index: Int) -> Day { snapshot.sections[index].model }
    func item(at path: ItemPath) -> Row { snapshot[path] }
    var stateID: ListStateID? { ListStateID(source: 7, generation: generation) }
}

/// A source of chained changesets between random models, like a live query.
struct ChangesetSource {
    private(set) var current: VersionedList

    init(_ model: Model) { current = VersionedList(snapshot: model, generation: 0) }

    /// The changeset from the current model to `model`, which becomes current.
    mutating func changeset(to model: Model) -> Changeset<Day, Row> {
        let next = VersionedList(snapshot: model, generation: current.generation + 1)
        let changes = Changeset(from: current.snapshot, to: model).changes
        defer { current = next }
        return Changeset(changes: changes, from: current, to: next)
    }
}
