import GRDB
import ListDiff
import ListPresenter
import LiveQuery

/// A live query in a list view, wired: the query, its ``LiveQuery/RowCache`` of records, a
/// ``ListPresenter/ListPresenter`` and a ``ListPresenter/ListCellSource`` as one object — for
/// UIKit, AppKit and terminal lists what `LiveQueryModel` is for SwiftUI.
///
/// It follows the query's ``LiveQuery/LiveQuery/events`` on the main actor: the first result
/// replaces the list (one reload), every update's changeset is applied as it is (no diff), and a
/// failure shows as the list's error row — the rows delivered before stay — whose retry looks
/// for changes again (``LiveQuery/LiveQuery/checkForExternalChanges()``); the next update, or a
/// retry that succeeds, clears it. An empty first screen whose rest is still being indexed shows
/// a loading row.
///
/// Attach the view with ``setTarget(_:)``; its data source reads ``cells`` (counts, cells with
/// their records or placeholders, state rows, headers). ``stop()`` ends the following; the query
/// itself stays open for its other consumers.
@MainActor
public final class LiveQueryController<ID: LiveIdentity, Record: FetchableRecord & Sendable> {
    /// The presenter type.
    public typealias Presenter = ListPresenter<LiveSection, LiveRow<ID>>
    /// The cell source type.
    public typealias Cells = ListCellSource<LiveSection, LiveRow<ID>, Record>

    /// The query followed.
    public let query: LiveQuery<ID>
    /// The records behind the rows, loaded by page.
    public let cache: RowCache<ID, Record>
    /// Applies the query's changes to the view.
    public let presenter: Presenter
    /// What each cell and header shows; the view's data source reads it.
    public let cells: Cells
    /// The newest result received.
    public private(set) var result: LiveResult<ID>
    /// The newest failure, until an update or a successful retry clears it.
    public private(set) var failure: LiveQueryError?
    private var follower: Task<Void, Never>?

    /// Follows `query`, loading its rows as `Record`s from `reader` in pages of `pageSize` (at
    /// most `maximumPages` held), `prefetch` rows ahead of what the view shows.
    public init(query: LiveQuery<ID>, reader: any DatabaseReader, pageSize: Int = 50, maximumPages: Int = 40,
                prefetch: Int = 20, configuration: Presenter.Configuration = Presenter.Configuration()) {
        self.query = query
        cache = RowCache(query: query, reader: reader, pageSize: pageSize, maximumPages: maximumPages)
        presenter = Presenter(configuration: configuration)
        cells = Cells(presenter: presenter, records: cache, prefetch: prefetch)
        result = query.latestResult
        cache.update(result: result)
        cells.receive(.initial(AnySectionedList(result), isComplete: result.isComplete))
        follower = query.follow(with: self) { owner, event in owner.receive(event) }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// Attaches the view (or detaches it, with `nil`); see ``ListPresenter/ListCellSource/setTarget(_:)``.
    public func setTarget(_ target: (any ListTarget)?) {
        cells.setTarget(target)
    }

    /// Stops following the query: nothing changes on screen from now on. The query stays open
    /// (cancel it when nothing else uses it).
    public func stop() {
        follower?.cancel()
        follower = nil
    }

    /// Whether the controller still follows the query.
    public var isFollowing: Bool { follower != nil }

    func receive(_ event: LiveQueryEvent<ID>) {
        switch event {
        case let .initial(result):
            self.result = result
            failure = nil
            cache.update(result: result)
            if result.stateID == presenter.model.stateID {
                cells.receive(.recovered(isComplete: result.isComplete))
            } else {
                cells.receive(.initial(AnySectionedList(result), isComplete: result.isComplete))
            }
        case let .update(update):
            result = update.result
            failure = nil
            cache.update(result: update.result)
            cells.receive(.changes(update.changeset, isComplete: update.result.isComplete))
        case let .failure(error):
            failure = error
            let retry: @Sendable () -> Void
            if error.isTerminal {
                retry = {}   // the query has stopped: only reopening the database helps
            } else {
                retry = { [weak self] in Task { @MainActor in self?.retry() } }
            }
            cells.receive(.failure(LoadFailure(error, retry: retry)))
        }
    }

    /// Looks for changes again; success clears the failure (an update it finds clears it too).
    private func retry() {
        let query = query
        Task { [weak self] in
            do throws(LiveQueryError) {
                try await query.checkForExternalChanges()
                guard let self, failure != nil else { return }
                failure = nil
                cells.receive(.recovered(isComplete: result.isComplete))
            } catch {
                self?.receive(.failure(error))
            }
        }
    }
}
