import ListDiff
import ListPresenter

/// The records of a ``RemoteLiveQuery``'s rows, for a `ListCellSource`: rows of the window come
/// with their values; asking for others moves the window.
@MainActor
public final class RemoteRecords: ListRecordProvider {
    private weak var query: RemoteLiveQuery?
    public var onRowsLoaded: (@Sendable ([RemoteRowID]) -> Void)?
    public var onStateChanged: (@Sendable () -> Void)?

    init(query: RemoteLiveQuery) {
        self.query = query
    }

    public func record(for item: RemoteRow) -> RemoteRecord? { query?.record(for: item) }

    public func loadRecords(at positions: Range<Int>, prefetch: Int) {
        guard let query, !positions.isEmpty else { return }
        // Positions of the list shown; pending rows shift them within the window only.
        let start = query.serverPosition(ofDisplayed: positions.lowerBound)
        let end = query.serverPosition(ofDisplayed: positions.upperBound - 1) + 1
        query.showRows(at: start..<max(start, end))
    }

    public func placeholderState(atPosition position: Int) -> PlaceholderState { query?.placeholderState ?? .loading }
}
