#if canImport(UIKit) && !os(watchOS)
import ListDiff
import ListPresenter
import UIKit

/// Drives a `UITableView` for a ``ListPresenter``; see ``CollectionViewTarget`` for the wiring.
/// The view is held weakly: once it is gone, the adapter does nothing.
@MainActor
public final class TableViewTarget: ListTarget {
    /// The driven table view.
    public weak var tableView: UITableView?
    /// Call from the delegate's `scrollViewDidEndScrollingAnimation` (set by the presenter).
    public var scrollAnimationDidEnd: (@MainActor () -> Void)?
    /// The row animation for inserts, deletes and reloads.
    public var animation: UITableView.RowAnimation = .automatic

    /// Adapts `tableView` for a presenter.
    public init(_ tableView: UITableView) {
        self.tableView = tableView
    }

    public func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        guard let tableView else {
            updates()
            completion()
            return
        }
        withoutActuallyEscaping(updates) { updates in
            tableView.performBatchUpdates(updates, completion: { _ in MainActor.assumeIsolated { completion() } })
        }
    }

    public func recordChanges(_ changes: ListChanges) {
        guard let tableView else { return }
        tableView.deleteSections(IndexSet(changes.sectionDeletes), with: animation)
        tableView.insertSections(IndexSet(changes.sectionInserts), with: animation)
        for move in changes.sectionMoves { tableView.moveSection(move.from, toSection: move.to) }
        tableView.reloadSections(IndexSet(changes.sectionReloads), with: animation)
        tableView.deleteRows(at: changes.itemDeletes.map(IndexPath.init), with: animation)
        tableView.insertRows(at: changes.itemInserts.map(IndexPath.init), with: animation)
        for move in changes.itemMoves { tableView.moveRow(at: IndexPath(move.from), to: IndexPath(move.to)) }
        tableView.reloadRows(at: changes.itemReloads.map(IndexPath.init), with: animation)
    }

    public func recordReconfigures(_ paths: [ItemPath]) {
        tableView?.reconfigureRows(at: paths.map(IndexPath.init))
    }

    public var supportsReconfigure: Bool { true }
    public func reloadAll() { tableView?.reloadData() }
    public func layoutNow() { tableView?.layoutIfNeeded() }
    public var isOnScreen: Bool { tableView?.window != nil }
    public var visibleItemPaths: [ItemPath] { (tableView?.indexPathsForVisibleRows ?? []).sorted().map(ItemPath.init) }

    public func contentTop(of path: ItemPath) -> Double? {
        guard let tableView, path.section < tableView.numberOfSections, path.item < tableView.numberOfRows(inSection: path.section) else { return nil }
        return Double(tableView.rectForRow(at: IndexPath(path)).minY)
    }

    public var scrollOffset: Double {
        guard let tableView else { return 0 }
        return Double(tableView.contentOffset.y + tableView.adjustedContentInset.top)
    }

    public var maximumScrollOffset: Double {
        guard let tableView else { return 0 }
        let insets = tableView.adjustedContentInset
        return max(0, Double(tableView.contentSize.height + insets.top + insets.bottom - tableView.bounds.height))
    }

    public func scroll(to offset: Double, animated: Bool) {
        guard let tableView else { return }
        let y = CGFloat(offset) - tableView.adjustedContentInset.top
        tableView.setContentOffset(CGPoint(x: tableView.contentOffset.x, y: y), animated: animated)
    }

    public var selectedItemPaths: [ItemPath] { (tableView?.indexPathsForSelectedRows ?? []).sorted().map(ItemPath.init) }

    public func setSelected(_ isSelected: Bool, at path: ItemPath) {
        if isSelected {
            tableView?.selectRow(at: IndexPath(path), animated: false, scrollPosition: .none)
        } else {
            tableView?.deselectRow(at: IndexPath(path), animated: false)
        }
    }
}
#endif
