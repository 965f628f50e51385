import ListDiff
import ListPresenter
import LiveQueryCore
import LiveQueryPostgres
import LiveQueryPresenting

/// A row's values as a ``PostgresLiveQuery`` reads them for a cell: the SELECT's columns, by
/// name or position (numbers, text, bytes and booleans as PostgreSQL sends them; other types in
/// PostgreSQL's text form).
public struct PostgresRecordValues: Sendable, Hashable {
    /// The SELECT's column names, in order.
    public let columnNames: [String]
    /// The values, in the same order.
    public let values: [SQLValue]

    /// Values of `columnNames`, in the same order.
    public init(columnNames: [String], values: [SQLValue]) {
        self.columnNames = columnNames
        self.values = values
    }

    /// The value of the first column named `name`, or `nil` when the SELECT has none.
    /// - Complexity: O(columns).
    public subscript(name: String) -> SQLValue? {
        columnNames.firstIndex(of: name).map { values[$0] }
    }
}

/// A ``PostgresLiveQuery`` as a ``ListPresenter/ListSource``: its events on the main actor, and a
/// ``LiveQuery/RowCache`` of its rows' records, read by page with ``PostgresLiveQuery/values(of:)``
/// — what a `ListController` shows, as it shows a SQLite live query or a served list.
///
/// ```swift
/// import ListPresenter
/// import LiveQuery
/// import LiveQueryPostgres
/// import LiveQueryPostgresUI
///
/// struct Subject: Sendable {
///     var text: String
///
///     init(_ row: PostgresRecordValues) throws {
///         guard case let .text(text)? = row["subject"] else { throw PostgresRecordError(column: "subject") }
///         self.text = text.string
///     }
/// }
///
/// @MainActor
/// func subjects(_ query: PostgresLiveQuery<Int64>) -> ListController<PostgresLiveQuerySource<Int64, Subject>> {
///     ListController(source: PostgresLiveQuerySource(query: query, record: Subject.init))
/// }
/// ```
///
/// A row an update changed shows its new record in the batch that reloads it when the query's
/// re-read of it at the commit carried its columns (every column of a type PostgreSQL sends as
/// is, and no `version` column standing for them, see ``PostgresLiveQuery/values(of:)``): the
/// record is made from that read, with no placeholder and no page read. Otherwise it shows a
/// placeholder while its page loads. A row whose record `record` cannot make fails alone: its
/// placeholder carries the error, the rest of its page shows. A failure of the query comes with a retry that asks for its result
/// (``PostgresLiveQuery/upToDate()``); an update, or a retry that succeeds, ends it.
@MainActor
public final class PostgresLiveQuerySource<ID: LiveIdentity, Record: Sendable>: ListSource {
    public typealias SectionModel = LiveSection
    public typealias Item = LiveRow<ID>

    /// The query followed.
    public let query: PostgresLiveQuery<ID>
    private let relay: LiveQueryRelay<ID, Record>
    private var follower: Task<Void, Never>?

    /// Follows `query`; each row's record is `record(values)`, read in pages of `pageSize` rows
    /// (at most `maximumPages` held).
    public init(query: PostgresLiveQuery<ID>, pageSize: Int = 50, maximumPages: Int = 40,
                record: @escaping @Sendable (PostgresRecordValues) throws -> Record) {
        self.query = query
        let names = query.columnNames
        let cache = RowCache<ID, Record>(pageSize: pageSize, maximumPages: maximumPages, loader: { (ids: [ID]) async throws -> [ID: Result<Record, any Error>] in
            // The rows as the query holds them now: `values(of:)` reads each at that content.
            let result = query.latestResult
            let rows = ids.compactMap { id in result.position(of: id).flatMap(result.row(at:)) }
            return try await query.values(of: rows).mapValues { values in
                Result { try record(PostgresRecordValues(columnNames: names, values: values)) }
            }
        }, committed: { rows in
            // The changed rows the round's re-reads carried, at the versions asked for: nothing is read.
            query.keptValues(of: rows).mapValues { values in
                Result { try record(PostgresRecordValues(columnNames: names, values: values)) }
            }
        })
        relay = LiveQueryRelay(result: query.latestResult, cache: cache) { _ = try await query.upToDate() }
        let events = query.events
        follower = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                relay.receive(event)
            }
        }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// The records behind the rows, loaded by page.
    public var cache: RowCache<ID, Record> { relay.cache }
    /// The newest result received.
    public var result: LiveResult<ID> { relay.result }
    /// The newest failure, until an update or a successful retry (which asks for the query's
    /// result, ``PostgresLiveQuery/upToDate()``) clears it.
    public var failure: LiveQueryError? { relay.failure }

    /// The records behind the rows: the ``cache``.
    public var records: RowCache<ID, Record> { relay.cache }

    /// Hands every event from now on to `receive`: first the newest result (and the failure, if
    /// the query failed since), then each update and failure as the query delivers it.
    public func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<LiveSection, LiveRow<ID>>) -> Void) -> ListSourceSubscription {
        relay.subscribe(receive)
    }

    /// The state once every commit made before the call is in it (``PostgresLiveQuery/upToDate()``).
    public func upToDate() async throws -> ListStateID? {
        try await query.upToDate().stateID
    }
}

extension PostgresLiveQuerySource where Record == PostgresRecordValues {
    /// Follows `query`; each row's record is its values.
    public convenience init(query: PostgresLiveQuery<ID>, pageSize: Int = 50, maximumPages: Int = 40) {
        self.init(query: query, pageSize: pageSize, maximumPages: maximumPages) { $0 }
    }
}

/// A column a record needs is missing, or holds a value it cannot take (thrown by an app's
/// record closure, say, for a row's placeholder to show).
public struct PostgresRecordError: Error, Sendable, CustomStringConvertible {
    /// The column.
    public var column: String

    /// The error for `column`.
    public init(column: String) { self.column = column }

    public var description: String { "the column \"\(column)\" is missing or holds a value the record cannot take" }
}
