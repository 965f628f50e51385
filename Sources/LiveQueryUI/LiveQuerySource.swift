import GRDB
import ListDiff
import ListPresenter
import LiveQuery
import LiveQueryPresenting

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
    private let relay: LiveQueryRelay<ID, Record>
    private var follower: Task<Void, Never>?

    /// Follows `query`; its rows' records come from `cache`.
    public init(query: LiveQuery<ID>, cache: RowCache<ID, Record>) {
        self.query = query
        relay = LiveQueryRelay(result: query.latestResult, cache: cache) { try await query.checkForExternalChanges() }
        follower = query.follow(with: self) { owner, event in owner.receive(event) }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// The records behind the rows, loaded by page.
    public var cache: RowCache<ID, Record> { relay.cache }
    /// The newest result received.
    public var result: LiveResult<ID> { relay.result }
    /// The newest failure, until an update or a successful retry (which looks for changes again,
    /// ``LiveQuery/LiveQuery/checkForExternalChanges()``) clears it.
    public var failure: LiveQueryError? { relay.failure }

    /// The records behind the rows: the ``cache``.
    public var records: RowCache<ID, Record> { relay.cache }

    /// Hands every event from now on to `receive`: first the newest result (and the failure, if
    /// the query failed since), then each update and failure as the query delivers it.
    public func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<LiveSection, LiveRow<ID>>) -> Void) -> ListSourceSubscription {
        relay.subscribe(receive)
    }

    /// Takes an event as if the query had delivered it.
    func receive(_ event: LiveQueryEvent<ID>) { relay.receive(event) }

    /// The state once every commit made before the call is in it: this process's, other
    /// connections' and other processes' (see ``LiveQuery/LiveQuery/upToDate()``).
    public func upToDate() async throws -> ListStateID? {
        try await query.upToDate().stateID
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
