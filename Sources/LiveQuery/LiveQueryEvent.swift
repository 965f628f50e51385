import ListDiff

/// What a live query delivers: a changeset with the result it leads to, or a failure (after which
/// the last good result stays valid and the query keeps following the database).
public enum LiveQueryEvent: Sendable {
    case update(LiveQueryUpdate)
    case failure(LiveQueryError)
}

/// One delivered change: from the previously delivered result to `result`.
public struct LiveQueryUpdate: Sendable {
    /// How the change was computed.
    public enum Path: Sendable, Equatable {
        /// The changed rows were re-read and moved inside the index.
        case incremental
        /// The result was fetched again and diffed, for the reason given.
        case refetch(reason: String)
    }

    /// The changes, staged for UIKit; stage snapshots are built only when read.
    public let changeset: LiveChangeset
    /// The result after the change.
    public let result: LiveResult
    /// How the change was computed.
    public let path: Path
    /// From the commit (or the criteria change) to the changeset in hand.
    public let latency: Duration
}
