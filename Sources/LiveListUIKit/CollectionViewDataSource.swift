#if canImport(UIKit) && !os(watchOS)
import ListDiff
import ListPresenter
import UIKit

/// A `UICollectionViewDataSource` over a ``ListPresenter/ListCellSource``, shaped like
/// `UICollectionViewDiffableDataSource`: a cell provider receives the collection view, the index
/// path and what the cell shows — a record, a placeholder (loading, or failed with a retry) or a
/// state row — and returns a dequeued cell. No logic lives here: counts, content, page loads and
/// state rows are the cell source's, tested through the headless view.
///
/// Creating it makes it the collection view's data source and prefetch data source, and attaches
/// the view to the cell source's presenter (through a ``CollectionViewTarget``). Keep a strong
/// reference to it: the collection view holds its data source weakly. Prefetch requests load the
/// records of the rows about to appear. In the collection view's delegate, forward
/// `collectionView(_:didSelectItemAt:)` to ``activateRow(at:)`` (taps on error rows and failed
/// placeholders retry), `scrollViewDidEndScrollingAnimation` to the target's
/// ``CollectionViewTarget/scrollAnimationDidEnd`` and `scrollViewWillBeginDragging` to
/// `presenter.userDidInterruptScrolling()`.
@MainActor
public final class CollectionViewDataSource<SectionModel: ListElement, Item: ListElement, Record>:
    NSObject, UICollectionViewDataSource, UICollectionViewDataSourcePrefetching {
    /// What a cell shows.
    public typealias Content = CellContent<SectionModel, Item, Record>
    /// Returns the dequeued, configured cell for `content` at the index path.
    public typealias CellProvider = @MainActor (UICollectionView, IndexPath, Content) -> UICollectionViewCell
    /// Returns the dequeued, configured supplementary view of the kind at the index path, given
    /// what its section's header shows.
    public typealias SupplementaryViewProvider =
        @MainActor (UICollectionView, String, IndexPath, SectionHeaderContent<SectionModel>) -> UICollectionReusableView

    /// What each cell and header shows.
    public let cells: ListCellSource<SectionModel, Item, Record>
    /// The presenter's view of the collection view.
    public let target: CollectionViewTarget
    private let cellProvider: CellProvider
    /// Makes the views of supplementary elements (section headers and footers). A layout that
    /// asks for supplementary views needs one, as with `UICollectionViewDiffableDataSource`.
    public var supplementaryViewProvider: SupplementaryViewProvider?

    /// Shows `cells` in `collectionView`, each cell made by `cellProvider`.
    public init(collectionView: UICollectionView, cells: ListCellSource<SectionModel, Item, Record>,
                cellProvider: @escaping CellProvider) {
        self.cells = cells
        self.cellProvider = cellProvider
        target = CollectionViewTarget(collectionView)
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

    public func numberOfSections(in collectionView: UICollectionView) -> Int {
        cells.numberOfSections
    }

    public func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int {
        cells.numberOfItems(inSection: section)
    }

    public func collectionView(_ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath) -> UICollectionViewCell {
        cellProvider(collectionView, indexPath, cells.content(at: ItemPath(indexPath)))
    }

    public func collectionView(_ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String,
                               at indexPath: IndexPath) -> UICollectionReusableView {
        guard let supplementaryViewProvider else {
            preconditionFailure("the layout asks for a supplementary view of kind \(kind) but no supplementaryViewProvider is set")
        }
        return supplementaryViewProvider(collectionView, kind, indexPath, cells.header(forSection: indexPath.section))
    }

    public func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath]) {
        cells.visibleRangeDidChange(indexPaths.map(ItemPath.init))
    }
}
#endif
