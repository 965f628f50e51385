#if canImport(UIKit) && !os(watchOS)
import ListDiff
import ListPresenter
import UIKit

/// A `UITableViewDataSource` over a ``ListPresenter/ListCellSource``, shaped like
/// `UITableViewDiffableDataSource`: a cell provider receives the table view, the index path and
/// what the cell shows — a record, a placeholder (loading, or failed with a retry) or a state row
/// — and returns a dequeued cell. No logic lives here: counts, content, page loads and state rows
/// are the cell source's, tested through the headless view.
///
/// Creating it makes it the table view's data source and prefetch data source, and attaches the
/// view to the cell source's presenter (through a ``TableViewTarget``). Keep a strong reference
/// to it: the table view holds its data source weakly. Section titles come from
/// ``headerTitleProvider``; custom header views belong to the table view's delegate, which reads
/// `cells.header(forSection:)`. In the delegate, forward `tableView(_:didSelectRowAt:)` to
/// ``activateRow(at:)``, `scrollViewDidEndScrollingAnimation` to the target's
/// ``TableViewTarget/scrollAnimationDidEnd`` and `scrollViewWillBeginDragging` to
/// `presenter.userDidInterruptScrolling()`.
@MainActor
public final class TableViewDataSource<SectionModel: ListElement, Item: ListElement, Record>:
    NSObject, UITableViewDataSource, UITableViewDataSourcePrefetching {
    /// What a cell shows.
    public typealias Content = CellContent<SectionModel, Item, Record>
    /// Returns the dequeued, configured cell for `content` at the index path.
    public typealias CellProvider = @MainActor (UITableView, IndexPath, Content) -> UITableViewCell
    /// Returns the title of a section's header, given what the header shows (`nil`: no title).
    public typealias HeaderTitleProvider = @MainActor (UITableView, Int, SectionHeaderContent<SectionModel>) -> String?

    /// What each cell and header shows.
    public let cells: ListCellSource<SectionModel, Item, Record>
    /// The presenter's view of the table view.
    public let target: TableViewTarget
    private let cellProvider: CellProvider
    /// The titles of section headers; `nil` shows none.
    public var headerTitleProvider: HeaderTitleProvider?

    /// Shows `cells` in `tableView`, each cell made by `cellProvider`.
    public init(tableView: UITableView, cells: ListCellSource<SectionModel, Item, Record>,
                cellProvider: @escaping CellProvider) {
        self.cells = cells
        self.cellProvider = cellProvider
        target = TableViewTarget(tableView)
        super.init()
        tableView.dataSource = self
        tableView.prefetchDataSource = self
        cells.setTarget(target)
    }

    /// Runs the retry of the error row or failed placeholder at `indexPath`; returns whether
    /// there was one.
    @discardableResult
    public func activateRow(at indexPath: IndexPath) -> Bool {
        cells.activateRow(at: ItemPath(indexPath))
    }

    public func numberOfSections(in tableView: UITableView) -> Int {
        cells.numberOfSections
    }

    public func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
        cells.numberOfItems(inSection: section)
    }

    public func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        cellProvider(tableView, indexPath, cells.content(at: ItemPath(indexPath)))
    }

    public func tableView(_ tableView: UITableView, titleForHeaderInSection section: Int) -> String? {
        headerTitleProvider?(tableView, section, cells.header(forSection: section))
    }

    public func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
        cells.visibleRangeDidChange(indexPaths.map(ItemPath.init))
    }
}
#endif
