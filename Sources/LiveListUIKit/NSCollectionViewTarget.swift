#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit
import ListDiff
import ListPresenter

/// Drives an `NSCollectionView` for a ``ListPresenter``.
///
/// `NSCollectionView` applies a batch's deletes, then its inserts, then its moves, each set's
/// indices reflecting the operations before it — not UIKit's rules. The adapter therefore sends
/// every move and reload as a delete and an insert
/// (``ListDiff/ListChanges/asDeletesAndInserts``), which both semantics read the same way, and
/// tells the presenter that moved rows get new cells, so it restores their selection. The headless
/// view's `.appKitCollectionView` mode enforces those semantics in tests.
///
/// Forward the enclosing scroll view's end of a programmatic scroll to ``scrollAnimationDidEnd``
/// (AppKit animates `scroll(_:)` through the clip view's animator, which this adapter does and
/// reports itself). The view is held weakly: once it is gone, the adapter does nothing.
@MainActor
public final class NSCollectionViewTarget: ListTarget {
    /// The driven collection view.
    public weak var collectionView: NSCollectionView?
    /// Called when a programmatic scroll animation ends (set by the presenter).
    public var scrollAnimationDidEnd: (@MainActor () -> Void)?

    /// Adapts `collectionView` for a presenter.
    public init(_ collectionView: NSCollectionView) {
        self.collectionView = collectionView
    }

    public func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        guard let collectionView else {
            updates()
            completion()
            return
        }
        withoutActuallyEscaping(updates) { updates in
            collectionView.animator().performBatchUpdates(updates, completionHandler: { _ in MainActor.assumeIsolated { completion() } })
        }
    }

    public func recordChanges(_ changes: ListChanges) {
        guard let collectionView else { return }
        let sequential = changes.asDeletesAndInserts
        collectionView.deleteItems(at: Set(sequential.itemDeletes.map(IndexPath.init)))
        collectionView.deleteSections(IndexSet(sequential.sectionDeletes))
        collectionView.insertSections(IndexSet(sequential.sectionInserts))
        collectionView.insertItems(at: Set(sequential.itemInserts.map(IndexPath.init)))
    }

    public func recordReconfigures(_ paths: [ItemPath]) {
        var reloads = ListChanges()
        reloads.itemReloads = paths
        recordChanges(reloads)
    }

    public var supportsReconfigure: Bool { false }
    public var keepsCellsOnMove: Bool { false }
    public func reloadAll() { collectionView?.reloadData() }
    public func layoutNow() { collectionView?.layoutSubtreeIfNeeded() }
    public var isOnScreen: Bool { collectionView?.window != nil }
    public var visibleItemPaths: [ItemPath] { (collectionView?.indexPathsForVisibleItems() ?? []).sorted().map(ItemPath.init) }

    public func contentTop(of path: ItemPath) -> Double? {
        collectionView?.layoutAttributesForItem(at: IndexPath(path)).map { Double($0.frame.minY) }
    }

    /// The scroll view's top inset: offsets count from it, so that 0 is "scrolled to the top".
    private var topInset: Double {
        Double(collectionView?.enclosingScrollView?.contentInsets.top ?? 0)
    }

    public var scrollOffset: Double {
        guard let clipView = collectionView?.enclosingScrollView?.contentView else { return Double(collectionView?.visibleRect.minY ?? 0) }
        return Double(clipView.bounds.minY) + topInset
    }

    public var maximumScrollOffset: Double {
        guard let collectionView, let scrollView = collectionView.enclosingScrollView else { return 0 }
        let insets = scrollView.contentInsets
        let content = Double(collectionView.frame.height) + Double(insets.top + insets.bottom)
        return max(0, content - Double(scrollView.contentView.bounds.height))
    }

    public func scroll(to offset: Double, animated: Bool) {
        guard let collectionView else { return }
        let point = NSPoint(x: collectionView.visibleRect.minX, y: CGFloat(offset - topInset))
        if animated, let clipView = collectionView.enclosingScrollView?.contentView {
            NSAnimationContext.runAnimationGroup({ _ in clipView.animator().setBoundsOrigin(point) },
                                                 completionHandler: { [weak self] in
                                                     MainActor.assumeIsolated { self?.scrollAnimationDidEnd?() }
                                                 })
        } else if let clipView = collectionView.enclosingScrollView?.contentView {
            clipView.setBoundsOrigin(point)
        } else {
            collectionView.scroll(point)
        }
    }

    public var selectedItemPaths: [ItemPath] { (collectionView?.selectionIndexPaths ?? []).sorted().map(ItemPath.init) }

    public func setSelected(_ isSelected: Bool, at path: ItemPath) {
        if isSelected {
            collectionView?.selectionIndexPaths.insert(IndexPath(path))
        } else {
            collectionView?.selectionIndexPaths.remove(IndexPath(path))
        }
    }
}
#endif
