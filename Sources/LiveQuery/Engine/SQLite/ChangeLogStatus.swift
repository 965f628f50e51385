import LiveQueryCore

/// Why a live query does not read every other connection's commit from the change log
/// (``ChangeTracking``), for its notes and its refetch reasons.
enum ChangeLogStatus: Sendable, Equatable {
    /// Tables the query reads that the log does not track: other connections' commits refetch.
    case untracked([String])
    /// The connection is read-only: the query's position is not recorded.
    case readOnly
    /// The log cannot be read (dropped or altered by hand): other connections' commits refetch.
    case unavailable(String)

    /// The advice ``LiveQuery/notes`` gives.
    var note: String {
        switch self {
        case let .untracked(tables): "\(tables.joined(separator: ", ")) not tracked by the change log: other connections' commits refetch"
        case .readOnly: "the connection is read-only: this query's change-log position is not recorded, and it refetches if the log is pruned past it"
        case let .unavailable(reason): "the change log cannot be read (\(reason)): other connections' commits refetch"
        }
    }

    /// Why another connection's commit is refetched (`nil`: it is read from the log).
    var refetch: RefetchReason.ExternalCommit? {
        switch self {
        case let .untracked(tables): .untrackedTables(tables)
        case .readOnly: nil
        case .unavailable: .changeLogUnavailable
        }
    }
}
