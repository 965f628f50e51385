/// Why ``RemoteLiveQuery/restore(_:)`` did not show a snapshot.
public enum RemoteListRestoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The query has started, or holds a list already.
    case started
    /// The snapshot is of the query with this name.
    case otherQuery(String)
    /// The snapshot is of the query with other arguments.
    case otherArguments

    public var description: String {
        switch self {
        case .started: "the query has started: a snapshot is shown before start()"
        case let .otherQuery(name): "the snapshot is of the query \"\(name)\""
        case .otherArguments: "the snapshot is of the query with other arguments"
        }
    }
}
