import GRDB
import ListDiff
import ListPresenter
import LiveQuery

/// A SQLite live query in a list view, wired: the query, its ``LiveQuery/RowCache`` of records,
/// a ``ListPresenter/ListPresenter`` and a ``ListPresenter/ListCellSource`` as one object — for
/// UIKit, AppKit and terminal lists what `LiveQueryModel` is for SwiftUI. It is the
/// ``ListPresenter/ListController`` of a ``LiveQuerySource``: a remote or PostgreSQL list is shown
/// by the same controller over its own source, with the same cells, hooks and waits.
///
/// It follows the query's ``LiveQuery/LiveQuery/events`` on the main actor: the first result
/// replaces the list (one reload), every update's changeset is applied as it is (no diff), and a
/// failure shows as the list's error row — the rows delivered before stay — whose retry looks
/// for changes again (``LiveQuery/LiveQuery/checkForExternalChanges()``); the next update, or a
/// retry that succeeds, clears it. An empty first screen whose rest is still being indexed shows
/// a loading row.
///
/// Attach the view with ``ListPresenter/ListController/setTarget(_:)``; its data source reads
/// ``ListPresenter/ListController/cells``. After a write, `try await controller.upToDate()`
/// returns once the list holds it. ``ListPresenter/ListController/stop()`` ends the following;
/// the query itself stays open for its other consumers.
@MainActor
public final class LiveQueryController<ID: LiveIdentity, Record: FetchableRecord & Sendable>: ListController<LiveQuerySource<ID, Record>> {
    /// Follows `query`, loading its rows as `Record`s from `reader` in pages of `pageSize` (at
    /// most `maximumPages` held), `prefetch` rows ahead of what the view shows. Name the record
    /// type with `as:` where nothing else does (`LiveQueryController(query: q, reader: pool, as: Track.self)`).
    public init(query: LiveQuery<ID>, reader: any DatabaseReader, as record: Record.Type = Record.self, pageSize: Int = 50,
                maximumPages: Int = 40, prefetch: Int = 20, configuration: Presenter.Configuration = Presenter.Configuration()) {
        super.init(source: LiveQuerySource(query: query, reader: reader, pageSize: pageSize, maximumPages: maximumPages),
                   prefetch: prefetch, configuration: configuration)
    }

    /// The query followed.
    public var query: LiveQuery<ID> { source.query }
    /// The records behind the rows, loaded by page.
    public var cache: RowCache<ID, Record> { source.cache }
    /// The newest result received.
    public var result: LiveResult<ID> { source.result }
    /// The newest failure of the query, until an update or a successful retry clears it.
    public var queryFailure: LiveQueryError? { source.failure }
}
