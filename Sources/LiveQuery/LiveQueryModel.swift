import Foundation
import GRDB
import ListDiff
import Observation
import LiveQueryCore

/// A live query and its rows as records, for a view that binds to it: SwiftUI reads it under
/// observation tracking and redraws what depends on what changed — the result, the latest
/// update, a failure, or rows that finished loading.
///
/// ```swift
/// import Foundation
/// import GRDB
/// import LiveQuery
///
/// @MainActor
/// func makeModel(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> LiveQueryModel<UUID, ConversationRow> {
///     LiveQueryModel(query: query, reader: dbPool)
/// }
/// ```
///
/// It answers what NSFetchedResultsController's users reach for: ``numberOfSections``,
/// ``numberOfRows(inSection:)``, ``count``, ``sectionName(at:)``, ``sectionIndexTitles``,
/// ``indexPath(of:)`` and ``record(at:)`` (through a ``RowCache``, with its page's
/// ``pageState(at:)``). It follows the query through its ``LiveQuery/events`` sequence, as one
/// of its consumers, on the main actor; the main actor only ever touches the changed rows and the
/// rows it shows.
@MainActor
@Observable
public final class LiveQueryModel<ID: LiveIdentity, Record: FetchableRecord & Sendable> {
    /// The newest result delivered.
    public private(set) var result: LiveResult<ID>
    /// The newest update, with its changeset (`nil` before the first).
    public private(set) var latestUpdate: LiveQueryUpdate<ID>?
    /// The newest failure, cleared by the next update.
    public private(set) var failure: LiveQueryError?
    /// Moves whenever rows finish loading or a page changes state: what ``record(at:)`` returns
    /// depends on it.
    public private(set) var loadGeneration = 0

    /// The query followed.
    @ObservationIgnored public let query: LiveQuery<ID>
    /// The records behind the rows.
    @ObservationIgnored public let cache: RowCache<ID, Record>
    /// Rows loaded ahead of and behind the row asked for by ``record(at:)``.
    @ObservationIgnored public var prefetch = 20
    @ObservationIgnored private var follower: Task<Void, Never>?
    /// The index titles of the result they were computed for: a view asks for them on every
    /// redraw, and they only change with the sections.
    @ObservationIgnored private var titles: (state: ListStateID?, titles: [String])?

    /// Follows `query`, loading records from `reader` in pages of `pageSize`.
    public init(query: LiveQuery<ID>, reader: any DatabaseReader, pageSize: Int = 50, maximumPages: Int = 40) {
        self.query = query
        cache = RowCache(query: query, reader: reader, pageSize: pageSize, maximumPages: maximumPages)
        result = query.latestResult
        cache.update(result: result)
        let bump: @Sendable () -> Void = { [weak self] in
            Task { @MainActor in self?.loadGeneration += 1 }
        }
        cache.onRowsLoaded = { _ in bump() }
        cache.onStateChanged = bump
        follower = query.follow(with: self) { owner, event in owner.receive(event) }
    }

    isolated deinit {
        follower?.cancel()
    }

    private func receive(_ event: LiveQueryEvent<ID>) {
        switch event {
        case let .initial(result):
            self.result = result
            cache.update(result: result)
        case let .update(update):
            result = update.result
            latestUpdate = update
            failure = nil
            // The rows it changed come with it (from the commit's re-read): no reload of their pages.
            cache.update(with: update)
        case let .failure(error):
            failure = error
        }
    }

    /// Where the list stands: loading (the result is still a first screen: ``count`` is not
    /// final), empty, loaded, or failed for good (a terminal error).
    public var listState: LoadState {
        if let failure, failure.isTerminal { return .failed(LoadFailure(failure, retry: {})) }
        guard result.isComplete else { return .loading }
        return result.count == 0 ? .empty : .loaded
    }

    /// The rows of the SQL result the list leaves out, and why (see ``LiveResult/leftOut``).
    public var leftOut: LeftOutRows { result.leftOut }

    /// The number of sections.
    public var numberOfSections: Int { result.sectionCount }

    /// The number of rows in `section`.
    public func numberOfRows(inSection section: Int) -> Int { result.itemCount(inSection: section) }

    /// The number of rows.
    public var count: Int { result.count }

    /// The name of section `index` (see ``LiveResult/sectionName(at:)``).
    public func sectionName(at index: Int) -> String { result.sectionName(at: index) }

    /// The section index titles (see ``LiveResult/sectionIndexTitles``), computed once per result.
    public var sectionIndexTitles: [String] {
        let result = result
        if let titles, titles.state == result.stateID, titles.state != nil { return titles.titles }
        let computed = result.sectionIndexTitles
        titles = (result.stateID, computed)
        return computed
    }

    /// The index path of the row identified by `id`; `nil` when it is not in the result, or not
    /// indexed yet — ``location(of:)`` tells the two apart. O(log n).
    public func indexPath(of id: ID) -> ItemPath? { result.path(ofItem: id) }

    /// Where the row identified by `id` is: at a path, not in the result, or not known yet while
    /// the result is a first screen. O(log n).
    public func location(of id: ID) -> RowLocation { result.location(of: id) }

    /// The row at `path` with its record when loaded; otherwise a placeholder, and its page (with
    /// ``prefetch`` rows around it) is loaded. O(log n) when cached.
    public func record(at path: ItemPath) -> RowSlot<ID, Record>? {
        _ = loadGeneration   // observed: a load that lands redraws what read this
        guard let position = result.position(of: path) else { return nil }
        return cache.rows(in: position..<position + 1, prefetch: prefetch).first
    }

    /// The load state of the page holding `path`.
    public func pageState(at path: ItemPath) -> PageState {
        _ = loadGeneration
        guard let position = result.position(of: path) else { return .loaded }
        return cache.pageState(position / cache.pageSize)
    }
}
