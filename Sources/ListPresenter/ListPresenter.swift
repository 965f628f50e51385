import ListDiff

/// Keeps a list view in sync with a changing model: every change animates as UIKit-safe batches,
/// never while another batch or a programmatic scroll animation is running; updates that arrive
/// meanwhile are coalesced; selection follows rows by identity; the first visible row stays put;
/// load states show as inline rows.
///
/// ```swift
/// let presenter = ListPresenter<Day, Message>(target: adapter)
/// presenter.setLoadState(.loading)
/// // …whenever the data changes, from any source:
/// presenter.update(snapshot)
/// presenter.setLoadState(.loaded)
/// // The view's data source reads `presenter.displayed`.
/// ```
///
/// The presenter is an explicit state machine (``Phase``): `idle` → `applying` one stage → back to
/// `idle` when the view reports the batch's animation finished → the next stage, the next update, or
/// a deferred scroll; `scrolling` while its own animated scroll runs.
@MainActor
public final class ListPresenter<SectionModel: ListElement, Item: ListElement> {
    /// The model snapshots the presenter takes.
    public typealias Model = ListSnapshot<SectionModel, Item>
    /// A displayed row: a model item or a state row.
    public typealias Row = PresentedRow<SectionModel, Item>
    /// What the view shows: the model with its state rows.
    public typealias Displayed = ListSnapshot<PresentedSection<SectionModel>, Row>

    /// What the presenter is doing.
    public enum Phase: Equatable, Sendable {
        /// Nothing in flight: a new update applies at once.
        case idle
        /// A batch is in flight; updates wait.
        case applyingBatch
        /// A programmatic scroll animation of the presenter's is in flight; updates wait.
        case scrolling
    }

    /// Tuning.
    public struct Configuration: Sendable {
        /// Changesets with more operations than this are applied with a reload (keeping the scroll
        /// anchor and the selection) instead of animated batches.
        public var reloadThreshold: Int
        /// Whether content-only changes use reconfigure (keeps cells and selection) when the
        /// target supports it.
        public var prefersReconfigure: Bool

        @inlinable
        /// Creates a configuration.
        public init(reloadThreshold: Int = 5_000, prefersReconfigure: Bool = true) {
            self.reloadThreshold = reloadThreshold
            self.prefersReconfigure = prefersReconfigure
        }
    }

    /// Counters a developer can read.
    public struct Statistics: Equatable, Sendable {
        /// Changesets applied as animated batches.
        public var changesets = 0
        /// Batches run (one per stage).
        public var batches = 0
        /// Changesets applied with a reload instead.
        public var reloads = 0
        /// Updates that arrived while something was in flight and were merged into a later diff.
        public var coalescedUpdates = 0
        /// Deferred scrolls performed.
        public var scrollsPerformed = 0
        /// Deferred scrolls dropped because their item was gone.
        public var scrollsDropped = 0

        /// Creates zeroed counters.
        public init() {}
    }

    /// What the view shows now; the view's data source reads this.
    public var displayed: Displayed { _displayed }
    @usableFromInline var _displayed: Displayed = Displayed()
    /// The latest model, which ``displayed`` converges to.
    public var model: Model { _model }
    @usableFromInline var _model: Model = Model()
    /// The list's own load state.
    public var listState: LoadState { _listState }
    @usableFromInline var _listState: LoadState = .loaded
    @usableFromInline
    var sectionStates: [SectionModel.ID: LoadState] = [:]
    /// What the presenter is doing.
    public var phase: Phase { _phase }
    @usableFromInline var _phase: Phase = .idle
    /// Tuning.
    public var configuration: Configuration
    /// Counters.
    public var statistics: Statistics { _statistics }
    @usableFromInline var _statistics: Statistics = Statistics()
    /// Called with the identities of selected items that left the list (and were deselected).
    public var onSelectionDropped: (([Item.ID]) -> Void)?
    /// Called with the identity of an item whose deferred scroll was dropped because it is gone.
    public var onScrollTargetMissing: ((Item.ID) -> Void)?

    /// The view. Setting it shows ``displayed`` with a reload.
    public var target: (any ListTarget)? {
        didSet {
            oldValue?.scrollAnimationDidEnd = nil
            target?.scrollAnimationDidEnd = { [weak self] in self?.scrollAnimationDidEnd() }
            _phase = .idle
            remainingStages = []
            target?.reloadAll()
            target?.layoutNow()
            advance()
        }
    }

    @usableFromInline
    var needsUpdate = false
    @usableFromInline
    var remainingStages: ArraySlice<ChangesetStage<PresentedSection<SectionModel>, Row>> = []
    /// The state the stages in flight lead to.
    @usableFromInline
    var stagesTarget = Displayed()
    /// Selected items not on display right now (between the stages that remove and re-insert a row).
    @usableFromInline
    var selectionInTransit: [Item.ID] = []
    @usableFromInline
    var pendingScroll: (id: Item.ID, animated: Bool)?
    /// Items whose visible cells must re-read their content (a page of rows loaded).
    @usableFromInline
    var pendingReconfigures: Set<Item.ID> = []
    /// Items deselected through the presenter while a batch was in flight.
    @usableFromInline
    var deselectedInFlight: Set<Item.ID> = []

    /// Creates a presenter; attach the view with ``target``.
    @inlinable
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Presents `snapshot` as the new model: the view animates to it as soon as it is idle.
    @inlinable
    public func update(_ snapshot: Model) {
        _model = snapshot
        setNeedsUpdate()
    }

    /// Presents the state a changeset leads to (from a live query). The presenter diffs against
    /// what is displayed, so a changeset that arrives while another is animating is never lost.
    @inlinable
    public func apply(_ changeset: Changeset<SectionModel, Item>) {
        guard let last = changeset.stages.last else { return }
        update(last.snapshot)
    }

    /// Refreshes the visible cells of `ids` in place — their content arrived (a page of rows
    /// loaded) but the list did not change. Reconfigures where the target can (cells and
    /// selection stay), reloads otherwise; waits, like any update, while something animates.
    @inlinable
    public func reconfigureItems(ids: some Sequence<Item.ID>) {
        pendingReconfigures.formUnion(ids)
        advance()
    }

    /// Sets the list's load state, shown as an inline row at the top.
    @inlinable
    public func setLoadState(_ state: LoadState) {
        _listState = state
        setNeedsUpdate()
    }

    /// Sets a section's load state, shown as an inline row at the end of the section.
    @inlinable
    public func setLoadState(_ state: LoadState, forSection id: SectionModel.ID) {
        sectionStates[id] = state
        setNeedsUpdate()
    }

    /// The load state of the section `id` (`.loaded` when none was set).
    @inlinable
    public func loadState(forSection id: SectionModel.ID) -> LoadState {
        sectionStates[id] ?? .loaded
    }

    /// Handles a tap on the row at `path`: an error row runs its retry. Returns whether it did.
    @inlinable
    @discardableResult
    public func activateRow(at path: ItemPath) -> Bool {
        guard let row = displayed.row(at: path), case let .block(block) = row, let retry = block.retry else { return false }
        retry()
        return true
    }

    /// Adapters call this when the user starts dragging: UIKit ends a programmatic scroll
    /// animation without its end callback then, and waiting for it would stall every update.
    @inlinable
    public func userDidInterruptScrolling() {
        guard phase == .scrolling else { return }
        _phase = .idle
        advance()
    }

    @inlinable
    func setNeedsUpdate() {
        if phase != .idle && needsUpdate { _statistics.coalescedUpdates += 1 }
        needsUpdate = true
        advance()
    }

    @inlinable
    func scrollAnimationDidEnd() {
        guard phase == .scrolling else { return }
        _phase = .idle
        advance()
    }
}

extension ListSnapshot {
    /// The item at `path`, or `nil` when the path is outside the snapshot.
    @inlinable
    func row(at path: ItemPath) -> Item? {
        guard sections.indices.contains(path.section), sections[path.section].items.indices.contains(path.item) else { return nil }
        return sections[path.section].items[path.item]
    }
}
