import ListDiff
import ListPresenter
import LiveQueryCore

/// A row cache is the record provider of a ``ListPresenter/ListCellSource`` over a live query's
/// rows: records are found by identity and version, loads go by page, a failed page's
/// placeholders carry its retry.
extension RowCache: ListRecordProvider {
    /// The cached content of `item` at its version; loads nothing.
    ///
    /// - Complexity: O(1).
    public func record(for item: LiveRow<ID>) -> Content? {
        content(of: item.id, version: item.version)
    }

    /// Starts the page loads the rows at `positions` (and `prefetch` on either side) miss.
    ///
    /// - Complexity: O(log n + positions + prefetch), as ``RowCache/rows(in:prefetch:)``.
    public func loadRecords(at positions: Range<Int>, prefetch: Int) {
        _ = rows(in: positions, prefetch: prefetch)
    }

    /// The row's own failure (its record does not decode), else the state of the page of
    /// `position`: failed with its retry, or loading.
    ///
    /// - Complexity: O(log n + page size).
    public func placeholderState(atPosition position: Int) -> PlaceholderState {
        if let failure = rowFailure(atPosition: position) { return .failed(failure) }
        switch pageState(position / pageSize) {
        case let .failed(failure): return .failed(failure)
        case .notLoaded, .loading, .loaded: return .loading
        }
    }
}
