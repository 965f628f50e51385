import ListDiff
import ListPresenter
import ListTesting

/// What the demo's sessions share over their presenter and headless view, whatever their
/// source: scrolling, the keyboard cursor, selection. A session gives the positions of its
/// source's rows; the cursor moves by position, through the source's O(log n) lookups, never by
/// walking the rows.
@MainActor
protocol DemoListView: DemoListSession {
    associatedtype Section: ListElement
    associatedtype Item: ListElement
    associatedtype Cell
    associatedtype Header

    var presenter: ListPresenter<Section, Item> { get }
    var view: HeadlessListView<Cell, Header> { get }
    /// The row the keyboard cursor is on, by identity.
    var cursor: Item.ID? { get set }
    /// The rows of the source's list.
    var rowCount: Int { get }
    /// The position of the cursor's row in the source's list (`nil`: not in it).
    var cursorPosition: Int? { get }
    /// The identity of the row at `position` of the source's list.
    func id(atPosition position: Int) -> Item.ID?
    /// The displayed path of the row at `position` of the source's list.
    func displayedPath(ofPosition position: Int) -> ItemPath?
    /// Whether the row's content is loaded (its cell shows it).
    func isLoaded(_ item: Item) -> Bool
}

extension DemoListView {
    var viewportRows: Int {
        get { view.viewportRows }
        set { view.viewportRows = newValue }
    }

    var contentOffset: Int { view.contentOffset }

    var maximumContentOffset: Int { view.maximumContentOffset }

    func setContentOffset(_ offset: Int) { view.setContentOffset(offset) }

    func moveCursor(by delta: Int) {
        guard rowCount > 0 else { return }
        let target = min(max(0, (cursorPosition ?? 0).addingReportingOverflow(delta).partialValue), rowCount - 1)
        guard let path = displayedPath(ofPosition: target), let row = view.row(of: path) else { return }
        cursor = id(atPosition: target)
        if row < view.contentOffset + 1 { view.setContentOffset(max(0, row - 1)) }
        if row >= view.contentOffset + view.viewportRows { view.setContentOffset(row - view.viewportRows + 1) }
    }

    func toggleSelectionAtCursor() {
        guard let id = cursor else { return }
        if presenter.selectedItemIDs.contains(id) { presenter.deselectItem(id: id) } else { presenter.selectItem(id: id) }
    }

    func moveCursorToLoadedRow(using random: inout SeededRandomNumberGenerator) {
        let loaded = view.visibleItems.compactMap { presenter.displayed.itemIfPresent(at: $0)?.item }.filter(isLoaded)
        if let item = loaded.randomElement(using: &random) { cursor = item.id }
    }

    func selectVisibleRow(using random: inout SeededRandomNumberGenerator) {
        if let path = view.visibleItems.randomElement(using: &random), let id = presenter.displayed.itemIfPresent(at: path)?.item?.id {
            presenter.selectItem(id: id)
        }
    }

    static func percentiles(_ values: [Double]) -> (p50: Double, p99: Double) {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return (0, 0) }
        return (sorted[sorted.count / 2], sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))])
    }
}
