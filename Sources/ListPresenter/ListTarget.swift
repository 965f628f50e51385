import ListDiff

/// What the presenter needs from a list view: batches with a completion, full reloads, geometry,
/// selection and programmatic scrolling. `LiveListUIKit` adapts `UICollectionView` and
/// `UITableView`; `ListTesting`'s `HeadlessListView` conforms for tests on any platform.
///
/// Conformances stay thin — every decision (when to apply, what to anchor, what to reselect) is the
/// presenter's, so it is tested once, through the headless view.
///
/// Geometry is in the view's own unit (points, or rows for a terminal list): only differences and
/// equality matter to the presenter.
@MainActor
public protocol ListTarget: AnyObject {
    /// Runs one batch update: `updates` switches the data source and records the changes, then the
    /// view animates; `completion` runs when that animation ends.
    func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void)
    /// Records `changes` in the open batch (indices as in ``ListChanges``).
    func recordChanges(_ changes: ListChanges)
    /// Records in-place content updates of items (old indices) in the open batch.
    func recordReconfigures(_ paths: [ItemPath])
    /// Whether ``recordReconfigures(_:)`` keeps cells (and their selection) rather than replacing them.
    var supportsReconfigure: Bool { get }
    /// Whether a moved row keeps its cell (and its selection), as in UIKit; `false` for views
    /// whose adapter writes moves as deletes and inserts (`NSCollectionView`).
    var keepsCellsOnMove: Bool { get }
    /// Drops every cached count and cell and reads the data source again.
    func reloadAll()
    /// Lays out now, so that counts are cached before the next batch (a batch right after a
    /// reload of a collection view is a known crash).
    func layoutNow()
    /// Whether the view is in a window; off-screen views get a reload instead of animations.
    var isOnScreen: Bool { get }
    /// The items whose cells are visible, in display order.
    var visibleItemPaths: [ItemPath] { get }
    /// The top edge of the item at `path`, in content coordinates; `nil` if there is no such item.
    func contentTop(of path: ItemPath) -> Double?
    /// The content coordinate shown at the top of the viewport.
    var scrollOffset: Double { get }
    /// The largest valid ``scrollOffset``.
    var maximumScrollOffset: Double { get }
    /// Scrolls to `offset`. An animated scroll to a different offset must end with a call of
    /// ``scrollAnimationDidEnd``; a scroll to the current offset animates nothing and calls nothing.
    func scroll(to offset: Double, animated: Bool)
    /// Called by the view when a programmatic scroll animation ends (set by the presenter).
    var scrollAnimationDidEnd: (@MainActor () -> Void)? { get set }
    /// The selected items.
    var selectedItemPaths: [ItemPath] { get }
    /// Selects or deselects the item at `path`, without animation or delegate callbacks.
    func setSelected(_ isSelected: Bool, at path: ItemPath)
}

extension ListTarget {
    /// UIKit keeps the cell of a moved row.
    public var keepsCellsOnMove: Bool { true }
}
