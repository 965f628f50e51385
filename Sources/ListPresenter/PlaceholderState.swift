import ListDiff

/// Why a row's cell shows a placeholder: its record is on its way, or its load failed.
/// Exhaustive: switch over it without `default:`.
public enum PlaceholderState: Sendable, CustomStringConvertible {
    /// The record is not held yet; its load is scheduled or under way.
    case loading
    /// The load of the record's page failed; `retry` runs that load again.
    case failed(LoadFailure)

    /// Whether the load failed.
    public var isFailed: Bool {
        if case .failed = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .loading: "loading"
        case let .failed(failure): "failed(\(failure.message))"
        }
    }
}
