import ListDiff
import ListPresenter
import LiveListWire

/// A list served by `livelist serve` whose rows decode into the app's `Decodable` type: the
/// ``ListPresenter/ListSource`` a ``ListPresenter/ListController`` shows, as it shows a local
/// live query.
///
/// ```swift
/// import Foundation
/// import ListPresenter
/// import LiveListClient
/// import LiveListWire
///
/// struct ServedMessage: Decodable {
///     var id: Int64
///     var sender: String
///     var subject: String
///     var day: Int64
/// }
///
/// @MainActor
/// func servedInbox() -> ListController<RemoteListSource<ServedMessage>> {
///     let query = RemoteLiveQuery(url: "ws://127.0.0.1:8080/live", query: "inbox", arguments: ["folder": .text("work")])
///     let controller = ListController(source: RemoteListSource(query, as: ServedMessage.self))
///     query.start()
///     return controller   // controller.setTarget(view); view's data source reads controller.cells
/// }
/// ```
///
/// Rows decode by column name, exactly (see ``RemoteRecordDecoder``); a row that does not fit
/// shows as a failed placeholder whose message names the column, and the other rows show.
@MainActor
public final class RemoteListSource<Record: Decodable>: ListSource {
    public typealias SectionModel = RemoteSection
    public typealias Item = RemoteRow

    /// The remote query followed.
    public let query: RemoteLiveQuery
    /// The decoded records of the rows the server sent.
    public let records: DecodedRemoteRecords<Record>

    /// Follows `query` (start it with ``RemoteLiveQuery/start()``), decoding its rows as `Record`s.
    public init(_ query: RemoteLiveQuery, as record: Record.Type = Record.self, decoder: RemoteRecordDecoder = RemoteRecordDecoder()) {
        self.query = query
        records = DecodedRemoteRecords(query: query, decoder: decoder)
    }

    /// See ``RemoteLiveQuery/subscribe(_:)``.
    public func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<RemoteSection, RemoteRow>) -> Void) -> ListSourceSubscription {
        query.subscribe(receive)
    }

    /// See ``RemoteLiveQuery/upToDate()``.
    public func upToDate() async throws -> ListStateID? {
        try await query.upToDate()
    }
}

/// The records of a ``RemoteLiveQuery``'s rows decoded into `Record`, each decoded once per
/// content version; a row that does not decode reads as a failed placeholder naming its column.
@MainActor
public final class DecodedRemoteRecords<Record: Decodable>: ListRecordProvider {
    public typealias Item = RemoteRow

    private let base: RemoteRecords
    private weak var query: RemoteLiveQuery?
    private let decoder: RemoteRecordDecoder
    /// Decoded records and failures by row, at the row's content version; pruned to the rows the
    /// list holds when it passes twice their number.
    private var decoded: [RemoteRowID: (version: UInt64, outcome: Result<Record, RemoteDecodingError>)] = [:]

    init(query: RemoteLiveQuery, decoder: RemoteRecordDecoder) {
        base = query.records
        self.query = query
        self.decoder = decoder
    }

    /// The query's records' callback: rows whose values arrived.
    public var onRowsLoaded: (@Sendable ([RemoteRowID]) -> Void)? {
        get { base.onRowsLoaded }
        set { base.onRowsLoaded = newValue }
    }

    /// The query's records' callback: the connection's state changed.
    public var onStateChanged: (@Sendable () -> Void)? {
        get { base.onStateChanged }
        set { base.onStateChanged = newValue }
    }

    /// The decoded record of `item` at its version, when the server sent its values.
    ///
    /// - Complexity: O(1) once decoded; O(columns) the first time.
    public func record(for item: RemoteRow) -> Record? {
        guard case let .success(record) = outcome(for: item) else { return nil }
        return record
    }

    /// The decoding failure of `item`, when its values do not fit `Record`.
    public func decodingError(for item: RemoteRow) -> RemoteDecodingError? {
        guard case let .failure(error) = outcome(for: item) else { return nil }
        return error
    }

    /// Moves the query's window over `positions` (and `prefetch` around them) when they are not in it.
    public func loadRecords(at positions: Range<Int>, prefetch: Int) {
        base.loadRecords(at: positions, prefetch: prefetch)
    }

    /// A row whose values do not fit `Record`: failed, naming the column; else the query's state.
    public func placeholderState(atPosition position: Int) -> PlaceholderState {
        if let query, position >= 0, position < query.displayedState.count,
           let error = decodingError(for: query.displayedState.row(at: position)) {
            return .failed(LoadFailure(error, retry: {}))
        }
        return base.placeholderState(atPosition: position)
    }

    private func outcome(for item: RemoteRow) -> Result<Record, RemoteDecodingError>? {
        if let held = decoded[item.id], held.version == item.version { return held.outcome }
        guard let raw = base.record(for: item) else { return nil }
        let outcome: Result<Record, RemoteDecodingError>
        do {
            outcome = .success(try decoder.decode(Record.self, from: raw))
        } catch let error as RemoteDecodingError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(RemoteDecodingError(column: "", value: nil, reason: .unsupportedShape("\(error)")))
        }
        if let query, decoded.count >= 2 * max(64, query.displayedState.known.count) { prune(keeping: query.displayedState) }
        decoded[item.id] = (item.version, outcome)
        return outcome
    }

    /// Keeps the decoded records of the rows `state` holds.
    private func prune(keeping state: RemoteListState) {
        let held = Set(state.known.values.map(\.id))
        decoded = decoded.filter { held.contains($0.key) }
    }
}
