import ListDiff

/// Any ``ListSource`` in a list view, wired: the source, a ``ListPresenter`` and a
/// ``ListCellSource`` as one object, the same for every source — a local live query, a PostgreSQL
/// one, a list served by `livelist serve`.
///
/// It follows the source's events on the main actor: the first state replaces the list (one
/// reload), every changeset is applied as it is (no diff), a failure shows as the list's error
/// row — the rows delivered before stay — and the next success clears it. ``willChange`` and
/// ``didChange`` hear each event around its application (what `NSFetchedResultsController`'s
/// delegate hears); ``upToDate()`` returns once the list holds every change committed before the
/// call — the point a test or a screen waits for after a write.
///
/// Attach the view with ``setTarget(_:)``; its data source reads ``cells`` (counts, cells with
/// their records or placeholders, state rows, headers). ``stop()`` ends the following; the
/// source stays open for its other consumers. Until a view is attached the presenter holds the
/// newest state in ``ListPresenter/model`` and ``ListPresenter/displayed`` stays empty: what a
/// view shows is what it was told.
@MainActor
open class ListController<Source: ListSource> {
    /// The presenter type.
    public typealias Presenter = ListPresenter<Source.SectionModel, Source.Item>
    /// The cell source type.
    public typealias Cells = ListCellSource<Source.SectionModel, Source.Item, Source.Record>
    /// An event of the source.
    public typealias Event = ListSourceEvent<Source.SectionModel, Source.Item>

    /// Where the list comes from.
    public let source: Source
    /// Applies the source's changes to the view.
    public let presenter: Presenter
    /// What each cell and header shows; the view's data source reads it.
    public let cells: Cells
    /// Called with each event before it is applied (the presenter still holds the state before).
    public var willChange: ((Event) -> Void)?
    /// Called with each event once it is applied (the presenter's model holds the new state).
    public var didChange: ((Event) -> Void)?
    /// The newest failure, until a change or a recovery clears it.
    public private(set) var failure: LoadFailure?

    private var subscription: ListSourceSubscription?
    /// The states received lately, newest last: a state a waiter asks for may have been passed.
    private var recentStates: [ListStateID] = []
    private var waiters: [(state: ListStateID, continuation: CheckedContinuation<Void, any Error>)] = []
    private static var remembered: Int { 256 }

    /// Follows `source`, loading `prefetch` rows ahead of what the view shows on either side.
    public init(source: Source, prefetch: Int = 20, configuration: Presenter.Configuration = Presenter.Configuration()) {
        self.source = source
        presenter = Presenter(configuration: configuration)
        cells = Cells(presenter: presenter, records: source.records, prefetch: prefetch)
        subscription = source.subscribe { [weak self] event in self?.receive(event) }
    }

    /// Attaches the view (or detaches it, with `nil`); see ``ListCellSource/setTarget(_:)``.
    public func setTarget(_ target: (any ListTarget)?) {
        cells.setTarget(target)
    }

    /// Stops following the source: nothing changes on screen from now on, and every
    /// ``upToDate()`` still waiting throws `CancellationError`. The source stays open.
    public func stop() {
        subscription?.cancel()
        subscription = nil
        let waiters = waiters
        self.waiters = []
        for waiter in waiters { waiter.continuation.resume(throwing: CancellationError()) }
    }

    /// Whether the controller still follows the source.
    public var isFollowing: Bool { subscription != nil }

    /// The row at displayed `path` (as the view's data source is asked for it), or `nil` for a
    /// state row or a path outside the list.
    ///
    /// - Complexity: what the model's read costs (O(log n) for a live result).
    public func item(at path: ItemPath) -> Source.Item? {
        guard case let .item(item) = presenter.displayed.itemIfPresent(at: path) else { return nil }
        return item
    }

    /// The record of the row at displayed `path` when it is held; loads nothing (a cell's
    /// ``ListCellSource/content(at:)`` starts the load).
    ///
    /// - Complexity: O(log n) for a live result, plus the provider's lookup.
    public func record(at path: ItemPath) -> Source.Record? {
        item(at: path).flatMap { source.records.record(for: $0) }
    }

    /// Whether the presenter's model is `state`, or a state received after it.
    public func holds(_ state: ListStateID) -> Bool {
        recentStates.contains(state)
    }

    /// Returns once the presenter's model holds every change committed to the source's data
    /// before the call (a view attached shows it once its batches in flight land). Throws what
    /// the source's look throws, and `CancellationError` when ``stop()`` comes first.
    public func upToDate() async throws {
        guard let state = try await source.upToDate(), !holds(state) else { return }
        guard isFollowing else { throw CancellationError() }
        try await withCheckedThrowingContinuation { continuation in
            waiters.append((state, continuation))
        }
    }

    /// Applies one event of the source.
    private func receive(_ event: Event) {
        willChange?(event)
        switch event {
        case .initial, .changes, .recovered: failure = nil
        case let .failure(failure): self.failure = failure
        }
        cells.receive(event)
        // The presenter's model is the state the event brought (its newest, batches in flight or not).
        if event.isStateChange, let state = presenter.model.stateID {
            recentStates.append(state)
            if recentStates.count > Self.remembered * 2 { recentStates.removeFirst(recentStates.count - Self.remembered) }
        }
        didChange?(event)
        guard !waiters.isEmpty else { return }
        let ready = waiters.filter { holds($0.state) }
        waiters.removeAll { holds($0.state) }
        for waiter in ready { waiter.continuation.resume() }
    }
}

extension ListSourceEvent {
    /// Whether the event brings a state (a first state or a changeset).
    var isStateChange: Bool {
        switch self {
        case .initial, .changes: true
        case .failure, .recovered: false
        }
    }
}
