import GRDB
import ListDiff
import ListPresenter
import LiveQuery

/// A SQLite ``LiveQuery/LiveQuery`` as a ``ListPresenter/ListSource``: its events on the main
/// actor, and the ``LiveQuery/RowCache`` of its records — what ``LiveQueryController`` shows.
///
/// The first result comes as a first state, each update's changeset as it is (no diff), a
/// failure with a retry that looks for changes again (``LiveQuery/LiveQuery/checkForExternalChanges()``);
/// an update or a retry that succeeds ends it. A terminal failure (the file removed or replaced)
/// has no retry: only reopening the database helps.
@MainActor
public final class LiveQuerySource<ID: LiveIdentity, Record: Sendable>: ListSource {
    public typealias SectionModel = LiveSection
    public typealias Item = LiveRow<ID>

    /// The query followed.
    public let query: LiveQuery<ID>
    /// The records behind the rows, loaded by page.
    public let cache: RowCache<ID, Record>
    /// The newest result received.
    public private(set) var result: LiveResult<ID>
    /// The newest failure, until an update or a successful retry clears it.
    public private(set) var failure: LiveQueryError?
    private let receivers = ListSourceReceivers<LiveSection, LiveRow<ID>>()
    private var follower: Task<Void, Never>?

    /// Follows `query`; its rows' records come from `cache`.
    public init(query: LiveQuery<ID>, cache: RowCache<ID, Record>) {
        self.query = query
        self.cache = cache
        result = query.latestResult
        cache.update(result: result)
        follower = query.follow(with: self) { owner, event in owner.receive(event) }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// The records behind the rows: the ``cache``.
    public var records: RowCache<ID, Record> { cache }

    /// Hands every event from now on to `receive`: first the newest result (and the failure, if
    /// the query failed since), then each update and failure as the query delivers it.
    public func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<LiveSection, LiveRow<ID>>) -> Void) -> ListSourceSubscription {
        receive(.initial(AnySectionedList(result), isComplete: result.isComplete))
        if let failure { receive(.failure(loadFailure(failure))) }
        return receivers.add(receive)
    }

    /// The state once every commit made before the call is in it: this process's, other
    /// connections' and other processes' (see ``LiveQuery/LiveQuery/upToDate()``).
    public func upToDate() async throws -> ListStateID? {
        try await query.upToDate().stateID
    }

    func receive(_ event: LiveQueryEvent<ID>) {
        switch event {
        case let .initial(result):
            let same = result.stateID == self.result.stateID
            self.result = result
            failure = nil
            cache.update(result: result)
            receivers.send(same ? .recovered(isComplete: result.isComplete) : .initial(AnySectionedList(result), isComplete: result.isComplete))
        case let .update(update):
            result = update.result
            failure = nil
            cache.update(result: update.result)
            receivers.send(.changes(update.changeset, isComplete: update.result.isComplete))
        case let .failure(error):
            failure = error
            receivers.send(.failure(loadFailure(error)))
        }
    }

    private func loadFailure(_ error: LiveQueryError) -> LoadFailure {
        // A terminal failure: the query has stopped; only reopening the database helps.
        guard !error.isTerminal else { return LoadFailure(error, retry: {}) }
        return LoadFailure(error) { [weak self] in
            Task { @MainActor in self?.retry() }
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
                receivers.send(.recovered(isComplete: result.isComplete))
            } catch {
                self?.receive(.failure(error))
            }
        }
    }
}

extension LiveQuerySource where Record: FetchableRecord {
    /// Follows `query`, loading its rows as `Record`s from `reader` in pages of `pageSize` (at
    /// most `maximumPages` held).
    public convenience init(query: LiveQuery<ID>, reader: any DatabaseReader, as record: Record.Type = Record.self,
                            pageSize: Int = 50, maximumPages: Int = 40) {
        self.init(query: query, cache: RowCache(query: query, reader: reader, pageSize: pageSize, maximumPages: maximumPages))
    }
}
