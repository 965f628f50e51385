import ListDiff

/// Answers, for every displayed path of a ``ListPresenter``, what the cell shows — a row with its
/// record, a placeholder while the record loads (or failed, with a retry), or one of the
/// presenter's state rows — and keeps the records coming: the data source of any list view
/// (UIKit, AppKit, a terminal list) is a thin layer over it.
///
/// It wires the chain every app otherwise writes by hand. A cell asked for a row whose record is
/// not held starts the load of that record's page (with ``prefetch`` rows around it);
/// ``visibleRangeDidChange(_:)`` does the same for what scrolled into view; when records land,
/// the cells that showed those rows as placeholders are reconfigured, visible or prepared ahead
/// of a scroll (``ListPresenter/reconfigureItems(ids:)``), and a page whose load fails or
/// recovers refreshes its placeholders. ``receive(_:)`` takes a
/// source's events: states and changesets go to the presenter, a failure shows as the list's error
/// row with its retry, and the next success clears it.
///
/// Attach the view with ``setTarget(_:)`` (not `presenter.target`): the cell source then hears
/// when a batch has landed and loads what became visible. While the view still displays an older
/// state than the provider holds (a batch animates, changes wait), records are matched by
/// identity and version only, and loads wait for the view to catch up.
///
/// Update the record provider and the presenter together (the provider's list is the presenter's
/// newest model). The cell source takes over the provider's ``ListRecordProvider/onRowsLoaded``
/// and ``ListRecordProvider/onStateChanged``.
@MainActor
public final class ListCellSource<SectionModel: ListElement, Item: ListElement, Record> {
    /// The presenter whose displayed rows this answers for.
    public typealias Presenter = ListPresenter<SectionModel, Item>
    /// What a cell shows.
    public typealias Content = CellContent<SectionModel, Item, Record>

    /// The presenter: it decides when the view changes; the cell source only reads
    /// ``ListPresenter/displayed`` and asks it to reconfigure cells and show states.
    public let presenter: Presenter
    /// Where records come from.
    public let records: any ListRecordProvider<Item, Record>
    /// How many rows on either side of the ones asked for are loaded ahead.
    public var prefetch: Int

    /// Placeholders handed out, by row, and whether they showed a failure: the cells to refresh
    /// when records land or a page's state changes. A row leaves it when its records land (its
    /// visible cells are reconfigured then), not when a read finds its record.
    var placeholders: [Item.ID: Bool] = [:]
    /// The displayed model's section starts, for flat positions (one pass per model state).
    var sectionStarts: (state: ListStateID, starts: [Int])?
    /// A pass over the visible rows is scheduled (after a batch or a reload).
    var refreshScheduled = false

    /// Answers for `presenter`'s rows with the records of `records`, loading `prefetch` rows
    /// ahead on either side.
    public init(presenter: Presenter, records: some ListRecordProvider<Item, Record>, prefetch: Int = 20) {
        self.presenter = presenter
        self.records = records
        self.prefetch = max(0, prefetch)
        let rowsLoaded: @Sendable ([Item.ID]) -> Void = { [weak self] ids in
            Task { @MainActor in self?.rowsDidLoad(ids) }
        }
        let stateChanged: @Sendable () -> Void = { [weak self] in
            Task { @MainActor in self?.loadStateDidChange() }
        }
        records.onRowsLoaded = rowsLoaded
        records.onStateChanged = stateChanged
    }

    /// The number of displayed sections: the model's, plus the list's status section while it
    /// shows a state row.
    public var numberOfSections: Int { presenter.displayed.sectionCount }

    /// The number of displayed rows in `section`, state rows included.
    ///
    /// - Complexity: what the model's count costs (O(log n) for a live result).
    public func numberOfItems(inSection section: Int) -> Int { presenter.displayed.itemCount(inSection: section) }

    /// What the cell at displayed `path` shows. A row whose record is not held comes back as a
    /// placeholder, and its page (with ``prefetch`` rows around it) starts loading; when it
    /// lands, the cell is reconfigured. A path outside the list reads as the list's empty row.
    ///
    /// - Complexity: O(1) beyond the presenter's own read (O(log n) for a live result) when the
    ///   record is held; O(log n + prefetch) to schedule a load, plus one pass over the sections
    ///   per model state when the list has several.
    public func content(at path: ItemPath) -> Content {
        let displayed = presenter.displayed
        guard let row = displayed.itemIfPresent(at: path) else { return .state(StateBlock(scope: .list, kind: .empty)) }
        switch row {
        case let .block(block):
            return .state(block)
        case let .item(item):
            // A read that finds the record leaves `placeholders` alone: it may not be the cell's
            // own (an app measuring a row, a check), and the landing it follows is heard of on a
            // later turn of the main actor — the cell that showed the placeholder is only
            // refreshed if the row is still noted then.
            if let record = records.record(for: item) { return .record(item, record) }
            var state = PlaceholderState.loading
            if isCaughtUp, let modelPath = displayed.modelPath(ofDisplayed: path) {
                let position = position(ofModelPath: modelPath, in: displayed.model)
                records.loadRecords(at: position..<position + 1, prefetch: prefetch)
                state = records.placeholderState(atPosition: position)
            }
            placeholders[item.id] = state.isFailed
            return .placeholder(item, state)
        }
    }

    /// What the header of displayed `section` shows: the model section and its load state, or the
    /// list's status section.
    ///
    /// - Complexity: what the model's section read costs (O(log n) for a live result).
    public func header(forSection section: Int) -> SectionHeaderContent<SectionModel> {
        switch presenter.displayed.section(at: section) {
        case .listStatus: .listStatus(presenter.listState)
        case let .section(model): .section(model, presenter.loadState(forSection: model.id))
        }
    }

    /// Handles a tap on the cell at displayed `path`: a state row or a placeholder whose load
    /// failed runs its retry. Returns whether it did.
    @discardableResult
    public func activateRow(at path: ItemPath) -> Bool {
        if presenter.activateRow(at: path) { return true }
        guard case let .placeholder(_, .failed(failure)) = content(at: path) else { return false }
        failure.retry()
        return true
    }

    /// Attaches the view (or detaches it, with `nil`): it becomes the presenter's target, and
    /// after every batch and reload the rows then visible are loaded.
    public func setTarget(_ target: (any ListTarget)?) {
        presenter.target = target.map { ObservedListTarget(base: $0) { [weak self] in self?.scheduleVisibleLoad() } }
        scheduleVisibleLoad()
    }

    /// Takes one event of the source: a first state replaces the model (one reload), a changeset
    /// is applied as it is; both clear a failed list state (and a loading one once the source is
    /// complete or has rows), as does a recovery. A failure shows as the list's error row with
    /// its retry, above the rows delivered before. Update the record provider before calling this.
    ///
    /// - Complexity: the presenter's — a changeset costs its changes, never the list; a first
    ///   state costs one reload.
    public func receive(_ event: ListSourceEvent<SectionModel, Item>) {
        switch event {
        case let .initial(model, isComplete):
            presenter.replace(with: model)
            settleListState(hasRows: model.itemCount > 0, isComplete: isComplete)
        case let .changes(changeset, isComplete):
            presenter.apply(changeset)
            settleListState(hasRows: (changeset.after?.itemCount ?? presenter.model.itemCount) > 0, isComplete: isComplete)
        case let .failure(failure):
            presenter.setLoadState(.failed(failure))
        case let .recovered(isComplete):
            settleListState(hasRows: presenter.model.itemCount > 0, isComplete: isComplete)
        }
    }

    /// A success ends a failed state; an empty first screen whose rest is coming shows loading.
    private func settleListState(hasRows: Bool, isComplete: Bool) {
        let isLoading = !hasRows && !isComplete
        switch presenter.listState {
        case .failed:
            presenter.setLoadState(isLoading ? .loading : .loaded)
        case .loading:
            if !isLoading { presenter.setLoadState(.loaded) }
        case .loaded, .empty:
            if isLoading { presenter.setLoadState(.loading) }
        }
    }
}
