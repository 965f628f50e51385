/// Where the content of a list, a section or a page stands — the same vocabulary for a SQLite
/// query, a network request or anything else that loads.
///
/// The enum is exhaustive on purpose: switch over it without a `default:` so that a new state
/// added later is a compile error rather than a blank screen.
///
/// ```swift
/// import ListDiff
///
/// func show(_ state: LoadState) {
///     switch state {
///     case .loading: showSpinner()
///     case .loaded: showRows()
///     case .empty: showEmptyMessage()
///     case .failed(let failure): showError(failure.message, retry: failure.retry)
///     }
/// }
/// ```
public enum LoadState: Sendable, CustomStringConvertible {
    /// The first load (or a refresh) is under way.
    case loading
    /// The content is there.
    case loaded
    /// Loading finished and there is nothing to show.
    case empty
    /// Loading failed; `retry` runs exactly what failed again.
    case failed(LoadFailure)

    public var description: String {
        switch self {
        case .loading: "loading"
        case .loaded: "loaded"
        case .empty: "empty"
        case let .failed(failure): "failed(\(failure.message))"
        }
    }
}

/// A failed load: what went wrong and how to try again.
public struct LoadFailure: Error, Sendable, CustomStringConvertible {
    /// The underlying error.
    public let error: any Error
    /// What a person reads in the error row.
    public let message: String
    /// Runs the failed load again.
    public let retry: @Sendable () -> Void

    /// Creates a failure from `error`, with `message` (by default the error's description).
    public init(_ error: any Error, message: String? = nil, retry: @escaping @Sendable () -> Void) {
        self.error = error
        self.message = message ?? String(describing: error)
        self.retry = retry
    }

    public var description: String { message }
}
