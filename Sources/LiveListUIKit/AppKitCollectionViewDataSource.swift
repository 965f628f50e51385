#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit
import ListDiff
import ListPresenter

/// An `NSCollectionViewDataSource` over a ``ListPresenter/ListCellSource``: an item provider
/// receives the collection view, the index path and what the item shows — a record, a
/// placeholder (loading, or failed with a retry) or a state row — and returns a made item
/// (`makeItem(withIdentifier:for:)`). No logic lives here.
///
/// Creating it makes it the collection view's data source and prefetch data source, and attaches
/// the view to the cell source's presenter (through an ``NSCollectionViewTarget``). Keep a strong
/// reference to it: the collection view holds its data source weakly. In the delegate, forward
/// `collectionView(_:didSelectItemsAt:)` to ``activateRow(at:)``.
@MainActor
public final class AppKitCollectionViewDataSource<SectionModel: ListElement, Item: ListElement, Record>:
    NSObject, NSCollectionViewDataSource, NSCollectionViewPrefetching {
    /// What an item shows.
    public typealias Content = CellContent<SectionModel, Item, Record>
    /// Returns the made, configured item for `content` at the index path.
    public typealias ItemProvider = @MainActor (NSCollectionView, IndexPath, Content) -> NSCollectionViewItem
    /// Returns the made, configured supplementary view of the kind at the index path, given what
    /// its section's header shows.
    public typealias SupplementaryViewProvider =
        @MainActor (NSCollectionView, NSCollectionView.SupplementaryElementKind, IndexPath, SectionHeaderContent<SectionModel>) -> NSView

    /// What each item and header shows.
    public let cells: ListCellSource<SectionModel, Item, Record>
    /// The presenter's view of the collection view.
    public let target: NSCollectionViewTarget
    private let itemProvider: ItemProvider
    /// Makes the views of supplementary elements; a layout that asks for them needs one.
    public var supplementaryViewProvider: SupplementaryViewProvider?

    /// Shows `cells` in `collectionView`, each item made by `itemProvider`.
    public init(collectionView: NSCollectionView, cells: ListCellSource<SectionModel, Item, Record>,
                itemProvider: @escaping ItemProvider) {
        self.cells = cells
        self.itemProvider = itemProvider
        target = NSCollectionViewTarget(collectionView)
        super.init()
        collectionView.dataSource = self
        collectionView.prefetchDataSource = self
        cells.setTarget(target)
    }

    /// Runs the retry of the error row or failed placeholder at `indexPath`; returns whether
    /// there was one.
    @discardableResult
    public func activateRow(at indexPath: IndexPath) -> Bool {
        cells.activateRow(at: ItemPath(indexPath))
    }

    public func numberOfSections(in collectionView: NSCollectionView) -> Int {
        cells.numberOfSections
    }

    public func collectionView(_ collectionView: NSCollectionView, numberOfItemsInSection section: Int) -> Int {
        cells.numberOfItems(inSection: section)
    }

    public func collectionView(_ collectionView: NSCollectionView, itemForRepresentedObjectAt indexPath: IndexPath) -> NSCollectionViewItem {
        itemProvider(collectionView, indexPath, cells.content(at: ItemPath(indexPath)))
    }

    public func collectionView(_ collectionView: NSCollectionView, viewForSupplementaryElementOfKind kind: NSCollectionView.SupplementaryElementKind,
                               at indexPath: IndexPath) -> NSView {
        guard let supplementaryViewProvider else {
            preconditionFailure("the layout asks for a supplementary view of kind \(kind) but no supplementaryViewProvider is set")
        }
        return supplementaryViewProvider(collectionView, kind, indexPath, cells.header(forSection: indexPath.section))
    }

    public func collectionView(_ collectionView: NSCollectionView, prefetchItemsAt indexPaths: [IndexPath]) {
        cells.visibleRangeDidChange(indexPaths.map(ItemPath.init))
    }
}
#endif
