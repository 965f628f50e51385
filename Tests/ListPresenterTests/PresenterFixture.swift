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

    init(_ model: Model, viewportRows: Int = 5, animated: Bool = true, configuration: Presenter.Configuration = .init()) {
        presenter = Presenter(configuration: configuration)
        presenter.update(model)
        (view, dataSource) = presenter.attachHeadlessView(viewportRows: viewportRows)
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

    var selectedIDs: [Int] {
        view.selectedItems.compactMap { view.cellContent(at: $0)?.item?.id }
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

    /// Whether the view shows exactly the presenter's latest model, with no violation.
    var isConsistent: Bool {
        view.violations.isEmpty && view.staleCells().isEmpty
    }
}

func flat(_ ids: [Int], version: (Int) -> Int = { _ in 0 }) -> Model {
    Model(sections: [SnapshotSection(Day(id: 0), items: ids.map { Row(id: $0, version: version($0)) })])
}

func sectioned(_ sections: [(Int, [Int])]) -> Model {
    Model(sections: sections.map { SnapshotSection(Day(id: $0.0), items: $0.1.map { Row(id: $0) }) })
}
