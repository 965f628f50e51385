import ListDiff

/// Where one page of rows stands. Exhaustive: switch over it without `default:`.
///
/// ```swift
/// import ListDiff
/// import LiveQuery
///
/// func show(page: Int, of cache: RowCache<Int64, String>) {
///     switch cache.pageState(page) {
///     case .notLoaded: showPlaceholders()
///     case .loading: showShimmer()
///     case .loaded: break
///     case .failed(let failure): showRetry(failure.message, failure.retry)
///     }
/// }
/// ```
public enum PageState: Sendable, CustomStringConvertible {
    /// No row of the page is cached; cells show placeholders.
    case notLoaded
    /// A page query is in flight.
    case loading
    /// Every row of the page is cached at its current version.
    case loaded
    /// The last load of the page failed; `retry` runs exactly that load again.
    case failed(LoadFailure)

    public var description: String {
        switch self {
        case .notLoaded: "not loaded"
        case .loading: "loading"
        case .loaded: "loaded"
        case let .failed(failure): "failed(\(failure.message))"
        }
    }
}

/// A row slot as a cell sees it: the content, or nothing yet.
public enum RowSlot<ID: LiveIdentity, Content: Sendable>: Sendable {
    case loaded(LiveRow<ID>, Content)
    /// Not cached (or stale); a load is scheduled or failed — see the page state.
    case placeholder(LiveRow<ID>)
}
