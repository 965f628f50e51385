import ListDiff

/// What a live query delivers. Iterating ``LiveQuery/events`` starts with `.initial`, the result
/// current when the iteration began; then one `.update` per commit that changed the result, in
/// commit order, or a `.failure` (after which the last good result stays valid and, unless the
/// error is terminal, the query keeps following the database).
public enum LiveQueryEvent<ID: LiveIdentity>: Sendable {
    /// The result when this consumer started listening.
    case initial(LiveResult<ID>)
    /// A change, from the result delivered before it.
    case update(LiveQueryUpdate<ID>)
    /// Something went wrong; see ``LiveQueryError/isTerminal``.
    case failure(LiveQueryError)
}

/// How a live query's changes are computed.
public enum LiveUpdatePath: Sendable, Equatable, CustomStringConvertible {
    /// The changed rows were re-read and moved inside the index.
    case incremental
    /// The result was fetched again and diffed, for the reason given.
    case refetch(reason: RefetchReason)
    /// The rest of the first fetch: the query opened with its first screen of rows
    /// (``LiveQueryOptions/firstScreenRows``) and now holds them all.
    case firstFetchCompleted

    public var description: String {
        switch self {
        case .incremental: "incremental"
        case let .refetch(reason): "refetch (\(reason))"
        case .firstFetchCompleted: "first fetch completed"
        }
    }
}

/// One delivered change: from the previously delivered result to `result`.
public struct LiveQueryUpdate<ID: LiveIdentity>: Sendable {
    /// How the change was computed.
    public typealias Path = LiveUpdatePath

    /// The changes; ``Changeset/before`` is the result delivered before this one. Its
    /// ``Changeset/stages`` for UIKit are made when first read, on the reading thread (O(c log c)
    /// for c changes), never on the database's queue; their intermediate states are views over
    /// the results before and after.
    public let changeset: LiveChangeset<ID>
    /// The result after the change.
    public let result: LiveResult<ID>
    /// How the change was computed.
    public let path: LiveUpdatePath
    /// From the commit (or the criteria change) to the changeset in hand.
    public let latency: Duration
}
