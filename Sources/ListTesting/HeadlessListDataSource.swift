import ListDiff

/// What a ``HeadlessListView`` reads its content from, as a `UICollectionViewDataSource` would
/// provide it: counts, one value per cell and one per section header.
///
/// The view reads counts when it opens a batch with no cached counts and when it closes a batch,
/// and reads cells only when it creates or reconfigures them — so a data source that changes at
/// the wrong moment is caught exactly as UIKit would catch it.
@MainActor
public protocol HeadlessListDataSource<Cell, Header>: AnyObject {
    /// What a configured cell shows.
    associatedtype Cell
    /// What a configured section header shows.
    associatedtype Header

    /// The number of sections now.
    func numberOfSections() -> Int
    /// The number of items in `section` now.
    func numberOfItems(inSection section: Int) -> Int
    /// The content of the cell at `path` now.
    func cell(at path: ItemPath) -> Cell
    /// The content of the header of `section` now.
    func header(forSection section: Int) -> Header
}

/// A data source that shows a ``ListSnapshot``: cells are the snapshot's items, headers its
/// section models. Set ``snapshot`` inside a batch, as a real data source would.
@MainActor
public final class SnapshotDataSource<SectionModel: ListElement, Item: ListElement>: HeadlessListDataSource {
    /// What the data source shows.
    public var snapshot: ListSnapshot<SectionModel, Item>

    /// Creates a data source showing `snapshot`.
    public init(_ snapshot: ListSnapshot<SectionModel, Item> = ListSnapshot()) {
        self.snapshot = snapshot
    }

    public func numberOfSections() -> Int { snapshot.sections.count }
    public func numberOfItems(inSection section: Int) -> Int { snapshot.sections[section].items.count }
    public func cell(at path: ItemPath) -> Item { snapshot[path] }
    public func header(forSection section: Int) -> SectionModel { snapshot.sections[section].model }
}
