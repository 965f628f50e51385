import ListDiff

/// Keeps a list view in sync with a changing model: every change animates as UIKit-safe batches,
/// never while another batch or a programmatic scroll animation is running; changes that arrive
/// meanwhile are queued and merged; selection follows rows by identity; the first visible row
/// stays put; load states show as inline rows.
///
/// ```swift
/// import ListDiff
/// import ListPresenter
///
/// typealias Weekday = VersionedItem<String, Int>
/// typealias Email = VersionedItem<Int64, Int>
///
/// @MainActor
/// func present(_ first: ListSnapshot<Weekday, Email>, then next: ListSnapshot<Weekday, Email>, on view: some ListTarget) {
///     let presenter = ListPresenter<Weekday, Email>()
///     presenter.target = view
///     presenter.replace(with: first)                      // a first state: one reload, no diff
///     presenter.apply(Changeset(from: first, to: next))   // a changeset from where it is: applied as it is
/// }
/// ```
///
/// Two ways in:
/// - ``apply(_:)`` takes a changeset that starts where the presenter's model is (a live query's
///   updates do): its stages are applied as they are, and changesets that arrive while a batch
///   animates are queued and composed into one. The main actor's work is proportional to the
///   changes, never to the list: the data source reads ``displayed``, a view over the
///   changeset's states.
/// - ``update(_:)`` takes a plain state from a source that produces no changesets (a server's
///   JSON, hand-built view models) and diffs it against the model (O(n)).
///
/// The presenter is an explicit state machine (``Phase``): `idle` → `applyingBatch` for each stage
/// → back to `idle` when the view reports the batch's animation finished — or when it never does,
/// after ``Configuration/completionTimeout`` — then the next work: queued changes, state rows,
/// cells to reconfigure, a deferred scroll. `scrolling` while its own animated scroll runs.
@MainActor
public final class ListPresenter<SectionModel: ListElement, Item: ListElement> {
    /// A state of the model.
    public typealias Model = AnySectionedList<SectionModel, Item>
    /// A displayed row: a model item or a state row.
    public typealias Row = PresentedRow<SectionModel, Item>
    /// What the view shows: the model with its state rows.
    public typealias Displayed = PresentedList<SectionModel, Item>

    /// What the presenter is doing.
    public enum Phase: Equatable, Sendable {
        /// Nothing in flight: a new change applies at once.
        case idle
        /// A batch is in flight; changes wait.
        case applyingBatch
        /// A programmatic scroll animation of the presenter's is in flight; changes wait.
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
        /// How long to wait for a batch's or a scroll animation's completion before treating it
        /// as done (a view that never reports must not freeze the list); `nil` waits forever.
        public var completionTimeout: Duration?
        /// Scroll offsets closer than this are the same place: views round offsets to pixels, and
        /// a scroll to where the view already is never reports an end.
        public var offsetTolerance: Double

        /// Creates a configuration.
        public init(reloadThreshold: Int = 5_000, prefersReconfigure: Bool = true,
                    completionTimeout: Duration? = .seconds(2), offsetTolerance: Double = 0.5) {
            self.reloadThreshold = reloadThreshold
            self.prefersReconfigure = prefersReconfigure
            self.completionTimeout = completionTimeout
            self.offsetTolerance = offsetTolerance
        }
    }

    /// Counters a developer can read.
    public struct Statistics: Equatable, Sendable {
        /// Model changes applied as animated batches.
        public var changesets = 0
        /// Of those, changesets applied as they came (no diff).
        public var directChangesets = 0
        /// Plain states diffed against the model (``update(_:)``, or a changeset that did not
        /// start where the model was).
        public var fullDiffs = 0
        /// Batches run (one per stage).
        public var batches = 0
        /// Changes applied with a reload instead.
        public var reloads = 0
        /// Changes that arrived while something was in flight and were merged with others.
        public var coalescedUpdates = 0
        /// Deferred scrolls performed.
        public var scrollsPerformed = 0
        /// Deferred scrolls dropped because their item was gone.
        public var scrollsDropped = 0
        /// Batches whose completion never came within ``Configuration/completionTimeout``.
        public var timedOutBatches = 0
        /// Scroll animations whose end never came within ``Configuration/completionTimeout``.
        public var timedOutScrolls = 0

        /// Creates zeroed counters.
        public init() {}
    }

    /// What the view shows now; the view's data source reads this.
    public internal(set) var displayed = Displayed()
    /// The newest model, which ``displayed`` converges to.
    public var model: Model { pending.changesets.last?.after ?? pending.target?.model ?? state.modelInFlight ?? shownModel }
    /// The list's own load state.
    public internal(set) var listState: LoadState = .loaded
    var sectionStates: [SectionModel.ID: LoadState] = [:]
    /// What the presenter is doing.
    public var phase: Phase {
        switch state {
        case .idle: .idle
        case .applying: .applyingBatch
        case .scrolling: .scrolling
        }
    }
    /// Tuning.
    public var configuration: Configuration
    /// Counters.
    public internal(set) var statistics = Statistics()
    /// Called with the identities of selected items that left the list (and were deselected).
    public var onSelectionDropped: (([Item.ID]) -> Void)?
    /// Called with the identity of an item whose deferred scroll was dropped because it is gone.
    public var onScrollTargetMissing: ((Item.ID) -> Void)?

    /// The view. Setting it shows ``displayed`` with a reload.
    public var target: (any ListTarget)? {
        didSet {
            oldValue?.scrollAnimationDidEnd = nil
            target?.scrollAnimationDidEnd = { [weak self] in self?.scrollAnimationDidEnd() }
            dropWorkInFlight()
            target?.reloadAll()
            target?.layoutNow()
            advance()
        }
    }

    var state: State = .idle
    var pending = PendingWork<SectionModel, Item>()
    /// The model whose changes are all applied.
    var shownModel: Model = AnySectionedList(ListSnapshot<SectionModel, Item>())
    /// Selected items not on display right now (between the stages that remove and re-insert a row).
    var selectionInTransit: [Item.ID] = []
    /// Numbers batches and scrolls, so that a completion that comes after its time-out is ignored.
    var nextToken = 0

    /// Creates a presenter; attach the view with ``target``.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Presents `changeset`, which starts from the model's current state (a live query's next
    /// update): applied as it is — without a diff, in work proportional to its changes — as
    /// soon as the view is idle. Changesets that arrive meanwhile are composed into one.
    ///
    /// A changeset that does not start where the model is (its ``Changeset/before`` has another
    /// ``SectionedList/stateID``, or none) is treated as a plain new state: its
    /// ``Changeset/after`` is diffed against the model, as ``update(_:)`` does.
    ///
    /// - Complexity: O(c log c) on the main actor for c changes (staging, and composing with a
    ///   changeset still waiting), whatever the list's size; O(n) only for a changeset that does
    ///   not chain and is diffed, or one past ``Configuration/reloadThreshold`` (a reload).
    @inlinable
    public func apply(_ changeset: Changeset<SectionModel, Item>) {
        _receive(changeset: changeset, differ: { Changeset(from: $0, to: $1) })
    }

    /// Presents `snapshot` as the new model: diffed against the model (O(n)) and animated as
    /// soon as the view is idle. For sources that produce no changesets.
    ///
    /// - Complexity: O(n + m) for n rows before and m after (the diff), then O(c log c) for c
    ///   changes to stage.
    @inlinable
    public func update(_ snapshot: some SectionedList<SectionModel, Item>) {
        _receive(state: AnySectionedList(snapshot), differ: { Changeset(from: $0, to: $1) })
    }

    /// Shows `model` as the new model with one reload and no diff: a first state, or a jump
    /// (anchor and selection are kept by identity).
    public func replace(with model: some SectionedList<SectionModel, Item>) {
        pending.target = .replacement(AnySectionedList(model))
        pending.changesets = []
        advance()
    }

    /// Refreshes the cells of `ids` in place — their content arrived (a page of rows loaded) but
    /// the list did not change — wherever the view holds them: the visible ones and those it
    /// prepared ahead of a scroll, which it shows as they are when they scroll in. Reconfigures
    /// where the target can (cells and selection stay), reloads otherwise; waits, like any
    /// update, while something animates.
    ///
    /// - Complexity: one identity lookup per id (O(log n) each for a live query's result), and
    ///   one batch for the rows displayed.
    public func reconfigureItems(ids: some Sequence<Item.ID>) {
        pending.reconfigures.formUnion(ids)
        advance()
    }

    /// Sets the list's load state, shown as an inline row at the top.
    public func setLoadState(_ state: LoadState) {
        listState = state
        pending.blocksChanged = true
        advance()
    }

    /// Sets a section's load state, shown as an inline row at the end of the section.
    public func setLoadState(_ state: LoadState, forSection id: SectionModel.ID) {
        sectionStates[id] = state
        pending.blocksChanged = true
        advance()
    }

    /// The load state of the section `id` (`.loaded` when none was set).
    public func loadState(forSection id: SectionModel.ID) -> LoadState {
        sectionStates[id] ?? .loaded
    }

    /// Handles a tap on the row at `path`: an error row runs its retry. Returns whether it did.
    @discardableResult
    public func activateRow(at path: ItemPath) -> Bool {
        guard let row = displayed.itemIfPresent(at: path), case let .block(block) = row, let retry = block.retry else { return false }
        retry()
        return true
    }

    /// Adapters call this when the user starts dragging: UIKit ends a programmatic scroll
    /// animation without its end callback then, and waiting for it would stall every update.
    public func userDidInterruptScrolling() {
        guard case .scrolling = state else { return }
        becomeIdle()
        advance()
    }

    func scrollAnimationDidEnd() {
        guard case .scrolling = state else { return }
        becomeIdle()
        advance()
    }
}
