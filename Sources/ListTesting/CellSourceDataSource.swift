import ListDiff
import ListPresenter

/// A data source that shows what a ``ListPresenter/ListCellSource`` answers, as a UIKit data
/// source built on it would: cells are ``ListPresenter/CellContent`` values, headers
/// ``ListPresenter/SectionHeaderContent`` values. Reading a cell is what asks for its record.
@MainActor
public final class CellSourceDataSource<SectionModel: ListElement, Item: ListElement, Record>: HeadlessListDataSource {
    /// The cell source this data source reads.
    public typealias Source = ListCellSource<SectionModel, Item, Record>
    /// The cell source shown (held weakly, as a view holds its data source).
    public weak var cells: Source?
    /// Cells answered as placeholders (loading or failed) so far: with the view's
    /// ``HeadlessListView/cellReads``, what a test or benchmark counts to tell a row that blinked
    /// through a placeholder before its record from one that showed its record at once.
    public private(set) var placeholdersAnswered = 0

    /// Creates a data source for `cells`.
    public init(_ cells: Source) { self.cells = cells }

    public func numberOfSections() -> Int { cells?.numberOfSections ?? 0 }
    public func numberOfItems(inSection section: Int) -> Int { cells?.numberOfItems(inSection: section) ?? 0 }
    public func cell(at path: ItemPath) -> CellContent<SectionModel, Item, Record> {
        let content = cells?.content(at: path) ?? .state(StateBlock(scope: .list, kind: .empty))
        if case .placeholder = content { placeholdersAnswered += 1 }
        return content
    }
    public func header(forSection section: Int) -> SectionHeaderContent<SectionModel> {
        cells?.header(forSection: section) ?? .listStatus(.loaded)
    }
}

extension ListCellSource {
    /// A headless view attached through ``ListPresenter/ListCellSource/setTarget(_:)``, reading
    /// cells through a ``CellSourceDataSource`` (returned too: keep it alive as long as the view).
    public func attachHeadlessView(
        kind: HeadlessView.Kind = .collectionView,
        realization: HeadlessView.Realization = .visible(margin: 0),
        viewportRows: Int = 20, sectionHeaderRows: Int = 0
    ) -> (view: HeadlessView, dataSource: CellSourceDataSource<SectionModel, Item, Record>) {
        let dataSource = CellSourceDataSource(self)
        let view = HeadlessView(
            dataSource: dataSource, kind: kind, realization: realization, viewportRows: viewportRows, sectionHeaderRows: sectionHeaderRows)
        setTarget(view)
        return (view, dataSource)
    }
}

extension HeadlessListView {
    /// The held cells whose content is not what the cell source answers now: a row whose record
    /// landed but whose cell still shows its placeholder, a failure not shown, a wrong row, a row
    /// at an older version than its own. Rows compare by identity and content (their version);
    /// state rows by kind, scope and message; headers by their section's identity and content.
    ///
    /// Records are not compared: a record provider gives a row's record for its identity and
    /// version (``ListPresenter/ListRecordProvider``), so a cell that shows its row at the row's
    /// version with a record shows that row's record. Compare them as well with
    /// ``staleCells(recordsEqual:)``.
    public func staleCells<SectionModel, Item, Record>(
    ) -> [ItemPath] where Cell == CellContent<SectionModel, Item, Record>, Header == SectionHeaderContent<SectionModel> {
        staleCells(recordsEqual: { _, _ in true })
    }

    /// The held cells whose content is not what the cell source answers now, as
    /// ``staleCells()`` finds them, records compared too with `recordsEqual`.
    public func staleCells<SectionModel, Item, Record>(
        recordsEqual: (Record, Record) -> Bool
    ) -> [ItemPath] where Cell == CellContent<SectionModel, Item, Record>, Header == SectionHeaderContent<SectionModel> {
        staleCells(cellsEqual: { lhs, rhs in
            switch (lhs, rhs) {
            case let (.record(a, x), .record(b, y)): a.id == b.id && a.isContentEqual(to: b) && recordsEqual(x, y)
            case let (.placeholder(a, x), .placeholder(b, y)): a.id == b.id && a.isContentEqual(to: b) && x.isFailed == y.isFailed
            case let (.state(a), .state(b)): a.scope == b.scope && a.kind == b.kind && a.message == b.message
            default: false
            }
        }, headersEqual: { lhs, rhs in
            switch (lhs, rhs) {
            case (.listStatus, .listStatus): true
            case let (.section(a, _), .section(b, _)): a.id == b.id && a.isContentEqual(to: b)
            default: false
            }
        })
    }
}
