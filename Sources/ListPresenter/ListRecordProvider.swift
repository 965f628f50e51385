import ListDiff

/// Where a ``ListCellSource`` finds the record behind each row the presenter shows: a cache of
/// records loaded in pages (a live query's `RowCache` conforms in `LiveQueryUI`), or any store an
/// app writes.
///
/// Records are found by the row itself — its identity and its content version — never by
/// position alone, so a cell never shows another row's record while the view still displays an
/// older state than the provider holds. Positions only say what to load: they are flat positions
/// (0 ..< the number of rows, across sections) in the provider's current list, which must be the
/// presenter's newest model (update both together).
///
/// Callbacks may arrive on any thread; the cell source takes both over when it is created.
@MainActor
public protocol ListRecordProvider<Item, Record>: AnyObject {
    /// A row of the list (a live query's `LiveRow`).
    associatedtype Item: ListElement where Item.ID: Sendable
    /// What a loaded row's cell shows.
    associatedtype Record

    /// The record of `item` when it is held for the item's current content; loads nothing.
    func record(for item: Item) -> Record?
    /// Makes sure the records at flat `positions`, and at `prefetch` positions on either side,
    /// are held or being loaded; returns at once.
    func loadRecords(at positions: Range<Int>, prefetch: Int)
    /// Where the record at flat `position` stands while it is not held.
    func placeholderState(atPosition position: Int) -> PlaceholderState
    /// Called, on any thread, with the identities of rows whose records just landed.
    var onRowsLoaded: (@Sendable ([Item.ID]) -> Void)? { get set }
    /// Called, on any thread, when a load starts, fails or finishes.
    var onStateChanged: (@Sendable () -> Void)? { get set }
}
