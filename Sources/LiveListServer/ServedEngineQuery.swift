import ListDiff
import LiveQueryCore

/// A served query over an engine's live query (``LiveQueryCore/LiveQueryProtocol``, SQLite's or
/// PostgreSQL's): its events, its order, the catch-up a `sync` waits for and stopping come from
/// ``live``; the engine adds how rows' values are read exactly and, when it has them, the
/// positions versions are named by. Both engines' served queries are one.
public protocol ServedEngineQuery: ServedLiveQuery {
    /// The engine's live query.
    associatedtype Live: LiveQueryProtocol where Live.ID == SQLValue
    /// The engine's live query this serves.
    var live: Live { get }
}

extension ServedEngineQuery {
    /// The live query's events.
    public var events: AsyncStream<LiveQueryEvent<SQLValue>> { live.events }
    /// The order the live query states on its columns.
    public var order: ResultOrder? { live.order }
    /// The table, identity and filter the live query states.
    public var source: ResultSource? { live.source }

    /// The state once every commit made before the call is in the live query's result.
    public func upToDate() async throws -> ListStateID? { try await live.upToDate().stateID }

    /// Stops the live query (at once for SQLite's; PostgreSQL's leaves its engine's round first).
    public func cancel() {
        let live = live
        Task { await live.cancel() }
    }
}
