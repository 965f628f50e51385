#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit
import ListDiff
import ListPresenter

/// Drives an `NSCollectionView` (whose batch updates follow UIKit's index rules) for a
/// ``ListPresenter``. Forward the enclosing scroll view's end of a programmatic scroll to
/// ``scrollAnimationDidEnd`` (AppKit animates `scroll(_:)` through the clip view's animator).
@MainActor
public final class NSCollectionViewTarget: ListTarget {
    /// The driven collection view.
    public unowned let collectionView: NSCollectionView
    /// Call from the delegate's `scrollViewDidEndScrollingAnimation` (set by the presenter).
    public var scrollAnimationDidEnd: (@MainActor () -> Void)?

    /// Adapts `collectionView` for a presenter.
    public init(_ collectionView: NSCollectionView) {
        self.collectionView = collectionView
    }

    public func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        withoutActuallyEscaping(updates) { updates in
            collectionView.animator().performBatchUpdates(updates, completionHandler: { _ in MainActor.assumeIsolated { completion() } })
        }
    }

    public func recordChanges(_ changes: ListChanges) {
        collectionView.deleteSections(IndexSet(changes.sectionDeletes))
        collectionView.insertSections(IndexSet(changes.sectionInserts))
        for move in changes.sectionMoves { collectionView.moveSection(move.from, toSection: move.to) }
        collectionView.reloadSections(IndexSet(changes.sectionReloads))
        collectionView.deleteItems(at: Set(changes.itemDeletes.map(IndexPath.init)))
        collectionView.insertItems(at: Set(changes.itemInserts.map(IndexPath.init)))
        for move in changes.itemMoves { collectionView.moveItem(at: IndexPath(move.from), to: IndexPath(move.to)) }
        collectionView.reloadItems(at: Set(changes.itemReloads.map(IndexPath.init)))
    }

    public func recordReconfigures(_ paths: [ItemPath]) {
        collectionView.reloadItems(at: Set(paths.map(IndexPath.init)))
    }

    public var supportsReconfigure: Bool { false }
    public func reloadAll() { collectionView.reloadData() }
    public func layoutNow() { collectionView.layoutSubtreeIfNeeded() }
    public var isOnScreen: Bool { collectionView.window != nil }
    public var visibleItemPaths: [ItemPath] { collectionView.indexPathsForVisibleItems().sorted().map(ItemPath.init) }

    public func contentTop(of path: ItemPath) -> Double? {
        collectionView.layoutAttributesForItem(at: IndexPath(path)).map { Double($0.frame.minY) }
    }

    public var scrollOffset: Double { Double(collectionView.visibleRect.minY) }

    public var maximumScrollOffset: Double {
        max(0, Double(collectionView.frame.height - collectionView.visibleRect.height))
    }

    public func scroll(to offset: Double, animated: Bool) {
        let point = NSPoint(x: collectionView.visibleRect.minX, y: CGFloat(offset))
        if animated, let clipView = collectionView.enclosingScrollView?.contentView {
            NSAnimationContext.runAnimationGroup({ _ in clipView.animator().setBoundsOrigin(point) },
                                                 completionHandler: { [weak self] in
                                                     MainActor.assumeIsolated { self?.scrollAnimationDidEnd?() }
                                                 })
        } else {
            collectionView.scroll(point)
        }
    }

    public var selectedItemPaths: [ItemPath] { collectionView.selectionIndexPaths.sorted().map(ItemPath.init) }

    public func setSelected(_ isSelected: Bool, at path: ItemPath) {
        if isSelected {
            collectionView.selectionIndexPaths.insert(IndexPath(path))
        } else {
            collectionView.selectionIndexPaths.remove(IndexPath(path))
        }
    }
}
#endif
