import ListDiff
import ListPresenter

/// A headless view of what a ``ListPresenter/ListCellSource`` answers — what
/// `controller.cells.attachHeadlessView()` returns: cells are ``ListPresenter/CellContent``,
/// headers ``ListPresenter/SectionHeaderContent``. A helper for one list names it as the
/// controller's `HeadlessView` — `ListController<RemoteListSource<Track>>.HeadlessView`,
/// `LiveQueryController<UUID, Track>.HeadlessView` — and one for any list as this:
///
/// ```swift
/// import ListDiff
/// import ListPresenter
/// import ListTesting
///
/// /// The records a headless view shows on screen, top to bottom.
/// @MainActor
/// func shownRecords<SectionModel, Item, Record>(_ view: CellSourceListView<SectionModel, Item, Record>) -> [Record] {
///     view.visibleItems.compactMap { view.cellContent(at: $0)?.record }
/// }
///
/// /// Whether the view shows its list as it is, whatever the record type: no batch UIKit would
/// /// refuse, no cell showing an older content than its row's.
/// @MainActor
/// func showsItsList<SectionModel, Item, Record>(_ view: CellSourceListView<SectionModel, Item, Record>) -> Bool {
///     view.violations.isEmpty && view.staleCells().isEmpty
/// }
/// ```
public typealias CellSourceListView<SectionModel: ListElement, Item: ListElement, Record> =
    HeadlessListView<CellContent<SectionModel, Item, Record>, SectionHeaderContent<SectionModel>>

/// A headless view of what a ``ListPresenter/ListPresenter`` displays — what
/// `presenter.attachHeadlessView()` returns: cells are its ``ListPresenter/PresentedRow``s,
/// headers its ``ListPresenter/PresentedSection``s. Also `ListPresenter<S, I>.HeadlessView`.
public typealias PresenterListView<SectionModel: ListElement, Item: ListElement> =
    HeadlessListView<PresentedRow<SectionModel, Item>, PresentedSection<SectionModel>>

extension ListController {
    /// The headless view `cells.attachHeadlessView()` attaches to this controller's cells.
    public typealias HeadlessView = CellSourceListView<Source.SectionModel, Source.Item, Source.Record>
}

extension ListCellSource {
    /// The headless view ``attachHeadlessView(kind:realization:viewportRows:sectionHeaderRows:)`` attaches.
    public typealias HeadlessView = CellSourceListView<SectionModel, Item, Record>
}

extension ListPresenter {
    /// The headless view ``attachHeadlessView(kind:realization:viewportRows:sectionHeaderRows:)`` attaches.
    public typealias HeadlessView = PresenterListView<SectionModel, Item>
}
