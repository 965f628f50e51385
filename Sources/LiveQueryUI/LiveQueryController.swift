import GRDB
import ListDiff
import ListPresenter
import LiveQuery

/// A SQLite live query in a list view, wired: the query, its ``LiveQuery/RowCache`` of records,
/// a ``ListPresenter/ListPresenter`` and a ``ListPresenter/ListCellSource`` as one object — for
/// UIKit, AppKit and terminal lists what `LiveQueryModel` is for SwiftUI. It is a name for the
/// ``ListPresenter/ListController`` of a ``LiveQuerySource``, which
/// `LiveQueryController(query:reader:as:)` makes with its types inferred from the arguments: a
/// remote or PostgreSQL list is the same controller over its own source, with the same cells,
/// hooks and waits.
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
public typealias LiveQueryController<ID: LiveIdentity, Record: FetchableRecord & Sendable> = ListController<LiveQuerySource<ID, Record>>

extension ListController {
    /// Follows `query`, loading its rows as `Record`s from `reader` in pages of `pageSize` (at
    /// most `maximumPages` held), `prefetch` rows ahead of what the view shows: a
    /// ``LiveQueryController`` whose types come from the arguments — name the record type with
    /// `as:` where nothing else does (`LiveQueryController(query: q, reader: pool, as: Track.self)`).
    public convenience init<ID: LiveIdentity, Record: FetchableRecord & Sendable>(
        query: LiveQuery<ID>, reader: any DatabaseReader, as record: Record.Type = Record.self, pageSize: Int = 50,
        maximumPages: Int = 40, prefetch: Int = 20, configuration: Presenter.Configuration = Presenter.Configuration()
    ) where Source == LiveQuerySource<ID, Record> {
        self.init(source: LiveQuerySource(query: query, reader: reader, pageSize: pageSize, maximumPages: maximumPages),
                  prefetch: prefetch, configuration: configuration)
    }
}

extension ListController where Source: LiveQueryListSource {
    /// The query followed.
    public var query: LiveQuery<Source.ID> { source.query }
    /// The records behind the rows, loaded by page.
    public var cache: RowCache<Source.ID, Source.Record> { source.cache }
    /// The newest result received.
    public var result: LiveResult<Source.ID> { source.result }
    /// The newest failure of the query, until an update or a successful retry clears it.
    public var queryFailure: LiveQueryError? { source.failure }
}

/// A list source over a SQLite live query (``LiveQuerySource``): what a ``LiveQueryController``
/// reads through to its query, its row cache, its newest result and failure.
@MainActor
public protocol LiveQueryListSource: ListSource where Record: Sendable {
    /// How the query identifies its rows.
    associatedtype ID: LiveIdentity
    /// The query followed.
    var query: LiveQuery<ID> { get }
    /// The records behind the rows, loaded by page.
    var cache: RowCache<ID, Record> { get }
    /// The newest result received.
    var result: LiveResult<ID> { get }
    /// The newest failure of the query, until an update or a successful retry clears it.
    var failure: LiveQueryError? { get }
}

extension LiveQuerySource: LiveQueryListSource {}
