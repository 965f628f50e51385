#if canImport(UIKit) && !os(watchOS)
import ListDiff
import ListPresenter
import UIKit

/// Drives a `UICollectionView` for a ``ListPresenter``. No logic lives here: every decision is the
/// presenter's and is tested through the headless view.
///
/// Wiring: set `presenter.target` to this adapter; in the collection view's delegate, forward
/// `scrollViewDidEndScrollingAnimation` to ``scrollAnimationDidEnd`` and
/// `scrollViewWillBeginDragging` to `presenter.userDidInterruptScrolling()`. The data source
/// reads `presenter.displayed` for counts and cells.
///
/// The view is held weakly: once it is gone, the adapter does nothing.
@MainActor
public final class CollectionViewTarget: ListTarget {
    /// The driven collection view.
    public weak var collectionView: UICollectionView?
    /// Call from the delegate's `scrollViewDidEndScrollingAnimation` (set by the presenter).
    public var scrollAnimationDidEnd: (@MainActor () -> Void)?

    /// Adapts `collectionView` for a presenter.
    public init(_ collectionView: UICollectionView) {
        self.collectionView = collectionView
    }

    public func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        guard let collectionView else {
            updates()
            completion()
            return
        }
        withoutActuallyEscaping(updates) { updates in
            collectionView.performBatchUpdates(updates, completion: { _ in MainActor.assumeIsolated { completion() } })
        }
    }

    public func recordChanges(_ changes: ListChanges) {
        guard let collectionView else { return }
        collectionView.deleteSections(IndexSet(changes.sectionDeletes))
        collectionView.insertSections(IndexSet(changes.sectionInserts))
        for move in changes.sectionMoves { collectionView.moveSection(move.from, toSection: move.to) }
        collectionView.reloadSections(IndexSet(changes.sectionReloads))
        collectionView.deleteItems(at: changes.itemDeletes.map(IndexPath.init))
        collectionView.insertItems(at: changes.itemInserts.map(IndexPath.init))
        for move in changes.itemMoves { collectionView.moveItem(at: IndexPath(move.from), to: IndexPath(move.to)) }
        collectionView.reloadItems(at: changes.itemReloads.map(IndexPath.init))
    }

    public func recordReconfigures(_ paths: [ItemPath]) {
        collectionView?.reconfigureItems(at: paths.map(IndexPath.init))
    }

    public var supportsReconfigure: Bool { true }
    public func reloadAll() { collectionView?.reloadData() }
    public func layoutNow() { collectionView?.layoutIfNeeded() }
    public var isOnScreen: Bool { collectionView?.window != nil }

    public var visibleItemPaths: [ItemPath] {
        (collectionView?.indexPathsForVisibleItems ?? []).sorted().map(ItemPath.init)
    }

    public func contentTop(of path: ItemPath) -> Double? {
        collectionView?.layoutAttributesForItem(at: IndexPath(path)).map { Double($0.frame.minY) }
    }

    /// Offsets count from the top of the content inset, so that 0 is "scrolled to the top".
    public var scrollOffset: Double {
        guard let collectionView else { return 0 }
        return Double(collectionView.contentOffset.y + collectionView.adjustedContentInset.top)
    }

    public var maximumScrollOffset: Double {
        guard let collectionView else { return 0 }
        let insets = collectionView.adjustedContentInset
        return max(0, Double(collectionView.contentSize.height + insets.top + insets.bottom - collectionView.bounds.height))
    }

    public func scroll(to offset: Double, animated: Bool) {
        guard let collectionView else { return }
        let y = CGFloat(offset) - collectionView.adjustedContentInset.top
        collectionView.setContentOffset(CGPoint(x: collectionView.contentOffset.x, y: y), animated: animated)
    }

    public var selectedItemPaths: [ItemPath] {
        (collectionView?.indexPathsForSelectedItems ?? []).sorted().map(ItemPath.init)
    }

    public func setSelected(_ isSelected: Bool, at path: ItemPath) {
        if isSelected {
            collectionView?.selectItem(at: IndexPath(path), animated: false, scrollPosition: [])
        } else {
            collectionView?.deselectItem(at: IndexPath(path), animated: false)
        }
    }
}
#endif
