import ListDiff

/// A list view without a screen that behaves like `UICollectionView`/`UITableView` — or, in
/// ``Kind/appKitCollectionView`` mode, like `NSCollectionView` — where it matters for
/// correctness: it caches section and item counts, opens and closes batch updates, checks every
/// batch against the rules of docs/UIKIT-BATCH-RULES.md and throws a typed ``BatchUpdateViolation``
/// where UIKit would raise (in strict mode also where UIKit only corrupts itself), moves cells as
/// the real view does (so a stale or misplaced cell shows up as wrong content), and tracks a
/// viewport, a content offset, selection and a programmatic scroll animation.
///
/// ```swift
/// import ListDiff
/// import ListTesting
///
/// @MainActor
/// func check(from old: ListSnapshot<SingleSection, VersionedItem<Int, Int>>,
///            to new: ListSnapshot<SingleSection, VersionedItem<Int, Int>>) throws -> Bool {
///     let dataSource = SnapshotDataSource(old)
///     let view = HeadlessListView(dataSource: dataSource)
///     view.layoutIfNeeded()
///     try view.apply(Changeset(from: old, to: new), to: dataSource)
///     return view.staleCells().isEmpty
/// }
/// ```
///
/// Geometry is counted in rows: every item is one row, every section header
/// ``sectionHeaderRows`` rows.
///
/// With ``Realization/visible(margin:)`` the view holds cells only around its viewport, as UIKit
/// does, so that its own work per batch follows the batch, not the list; cells that scroll into
/// view are read from the data source then.
@MainActor
public final class HeadlessListView<Cell, Header> {
    /// Which platform view to imitate where their behaviour differs.
    public enum Kind: Sendable {
        /// `UICollectionView`: UIKit's batch rules.
        case collectionView
        /// `UITableView`: UIKit's batch rules.
        case tableView
        /// `NSCollectionView`: a batch applies its deletes, then its inserts, then its moves, each
        /// set's indices reflecting the operations before it.
        case appKitCollectionView
    }

    /// Which cells the view holds.
    public enum Realization: Sendable, Equatable {
        /// Every cell: every cell's content is checked (tests of small lists).
        case all
        /// The cells within `margin` rows of the viewport, as a real view keeps them.
        case visible(margin: Int)
    }

    /// A cell as the view holds it: the content it was configured with and its selection.
    public struct DisplayedCell {
        /// What the cell shows; it only changes when the cell is created, reloaded or reconfigured.
        public var content: Cell
        /// Whether the cell is selected.
        public var isSelected: Bool
    }

    /// What the view holds: counts and headers of every section, and its cells.
    struct Store {
        var headers: [Header]
        var counts: [Int]
        /// Every cell, by section (``Realization/all``).
        var cells: [[DisplayedCell]]?
        /// The realized cells (``Realization/visible(margin:)``).
        var realized: [ItemPath: DisplayedCell] = [:]
        /// The selected paths (``Realization/visible(margin:)``; with every cell held, selection
        /// lives on the cells).
        var selected: Set<ItemPath> = []
    }

    /// What the view reads counts and content from.
    public var dataSource: (any HeadlessListDataSource<Cell, Header>)?
    /// Which view to imitate.
    public let kind: Kind
    /// Which cells the view holds.
    public let realization: Realization
    /// Whether to raise also where UIKit only corrupts itself (stale cells, batch after reload).
    public var isStrict: Bool
    /// The height of the viewport, in rows.
    public var viewportRows: Int
    /// The height of each section header, in rows (0: no headers).
    public var sectionHeaderRows: Int
    /// When `false`, batch completions wait for ``finishBatchAnimations()``, so tests can deliver
    /// updates while a batch animation is in flight.
    public var completesBatchAnimationsImmediately = true
    /// When `true`, batch completions are never called (a view that never reports): the
    /// presenter's time-out must take over.
    public var dropsBatchCompletions = false
    /// Called when a programmatic scroll animation ends (`scrollViewDidEndScrollingAnimation`).
    public var onScrollAnimationEnded: (@MainActor () -> Void)?

    var store: Store?
    /// The first row in the viewport.
    public internal(set) var contentOffset = 0
    /// Where a programmatic scroll animation in flight will end, or `nil`.
    public internal(set) var scrollAnimationTarget: Int?
    /// Violations tolerated by UIKit that a non-strict view only records.
    public internal(set) var warnings: [BatchUpdateViolation] = []
    /// Violations raised while the view was driven as a `ListTarget` (whose methods cannot throw,
    /// as UIKit's cannot): a test asserts this stays empty.
    public internal(set) var violations: [BatchUpdateViolation] = []
    /// Whether the view is "in a window"; a presenter reloads instead of animating when it is not.
    public var isOnScreen = true
    /// Batches applied.
    public internal(set) var batchCount = 0
    /// Calls of `reloadData`.
    public internal(set) var reloadDataCount = 0
    /// Cells read from the data source (created, reloaded or reconfigured).
    public internal(set) var cellReads = 0

    var batchDepth = 0
    var pending = PendingBatch()
    var reloadedSinceLayout = false
    /// Completions of the batch being recorded (nested calls add theirs), then of batches whose
    /// animation is in flight.
    var batchCompletions: [@MainActor (Bool) -> Void] = []
    var pendingCompletions: [@MainActor (Bool) -> Void] = []
    var animatingBatches = 0

    /// Creates a view; it reads nothing until ``layoutIfNeeded()`` or the first batch.
    public init(
        dataSource: (any HeadlessListDataSource<Cell, Header>)? = nil,
        kind: Kind = .collectionView,
        realization: Realization = .all,
        isStrict: Bool = true,
        viewportRows: Int = 20,
        sectionHeaderRows: Int = 0
    ) {
        self.dataSource = dataSource
        self.kind = kind
        self.realization = realization
        self.isStrict = isStrict
        self.viewportRows = viewportRows
        self.sectionHeaderRows = sectionHeaderRows
    }

    /// Whether a batch update is open.
    public var isInsideBatch: Bool { batchDepth > 0 }
    /// Whether batch animations are still running (their completions not yet called).
    public var isAnimatingBatch: Bool { animatingBatches > 0 }
    /// Whether a programmatic scroll animation is in flight.
    public var isScrollAnimating: Bool { scrollAnimationTarget != nil }
    /// Whether the view has read its content (it has not since creation or `reloadData`).
    public var isLoaded: Bool { store != nil }

    /// The number of sections on display (loads the view if needed).
    public func numberOfSections() -> Int {
        layoutIfNeeded()
        return store?.counts.count ?? 0
    }

    /// The number of items on display in `section` (loads the view if needed).
    public func numberOfItems(inSection section: Int) -> Int {
        layoutIfNeeded()
        guard let store, store.counts.indices.contains(section) else { return 0 }
        return store.counts[section]
    }

    /// The header on display of `section`.
    public func header(ofSection section: Int) -> Header? {
        layoutIfNeeded()
        guard let store, store.headers.indices.contains(section) else { return nil }
        return store.headers[section]
    }

    /// The content of the displayed cell at `path` (`nil` when there is none, or — when the view
    /// holds only the cells near its viewport — when that cell is not held).
    public func cellContent(at path: ItemPath) -> Cell? {
        layoutIfNeeded()
        return displayedCell(at: path)?.content
    }

    func displayedCell(at path: ItemPath) -> DisplayedCell? {
        guard let store else { return nil }
        if let cells = store.cells {
            guard cells.indices.contains(path.section), cells[path.section].indices.contains(path.item) else { return nil }
            return cells[path.section][path.item]
        }
        return store.realized[path]
    }

    func contains(_ path: ItemPath) -> Bool {
        guard let store, store.counts.indices.contains(path.section) else { return false }
        return path.item >= 0 && path.item < store.counts[path.section]
    }

    /// Loads counts and cells from the data source if they are not cached, as a layout pass does.
    public func layoutIfNeeded() {
        reloadedSinceLayout = false
        guard store == nil, let dataSource else { return }
        let sections = dataSource.numberOfSections()
        var loaded = Store(headers: [], counts: [])
        for section in 0..<sections {
            loaded.headers.append(dataSource.header(forSection: section))
            loaded.counts.append(dataSource.numberOfItems(inSection: section))
        }
        if realization == .all {
            loaded.cells = loaded.counts.enumerated().map { section, count in
                (0..<count).map { DisplayedCell(content: readCell(at: ItemPath(section: section, item: $0), from: dataSource), isSelected: false) }
            }
        }
        store = loaded
        clampContentOffset()
        realizeVisibleCells()
    }

    /// Drops every cached count and cell, as `reloadData` does: selection is cleared and a
    /// programmatic scroll animation stops without its end callback (§4.3).
    public func reloadData() throws(BatchUpdateViolation) {
        guard batchDepth == 0 else { throw .reloadDataInsideBatch }
        store = nil
        reloadedSinceLayout = true
        scrollAnimationTarget = nil
        reloadDataCount += 1
    }

    /// Opens a batch, runs `updates`, and closes it: the batch is checked against every rule and
    /// applied. Nested calls join the outermost batch (§1.6).
    ///
    /// Before-counts are the cached ones; when nothing is cached they are read from the data
    /// source as the batch opens (§3.2), so a data source mutated before the batch is caught.
    /// On a violation the view drops its cache (as if it had crashed and been rebuilt).
    public func performBatchUpdates(
        _ updates: () throws(BatchUpdateViolation) -> Void,
        completion: (@MainActor (Bool) -> Void)? = nil
    ) throws(BatchUpdateViolation) {
        guard let dataSource else { throw .missingDataSource }
        if batchDepth == 0 {
            if reloadedSinceLayout && kind == .collectionView && isStrict {
                store = nil
                throw .batchRightAfterReloadData
            }
            layoutIfNeeded()
            pending = PendingBatch()
        }
        batchDepth += 1
        do {
            try updates()
        } catch {
            batchDepth -= 1
            if batchDepth == 0 {
                pending = PendingBatch()
                batchCompletions = []
            }
            throw error
        }
        batchDepth -= 1
        if let completion { batchCompletions.append(completion) }
        guard batchDepth == 0 else { return }
        let batch = pending
        pending = PendingBatch()
        let completions = batchCompletions
        batchCompletions = []
        do {
            if kind == .appKitCollectionView {
                try commitSequentially(batch, dataSource: dataSource)
            } else {
                try commit(batch, dataSource: dataSource)
            }
        } catch {
            store = nil
            throw error
        }
        batchCount += 1
        guard !dropsBatchCompletions else { return }
        pendingCompletions += completions
        animatingBatches += 1
        if completesBatchAnimationsImmediately { finishBatchAnimations() }
    }

    /// ``performBatchUpdates(_:completion:)`` for a closure that may throw any error: a
    /// ``BatchUpdateViolation`` it throws is the view's; other errors end the batch and propagate.
    @_disfavoredOverload
    public func performBatchUpdates(_ updates: () throws -> Void, completion: (@MainActor (Bool) -> Void)? = nil) throws {
        var thrown: (any Error)?
        do {
            try performBatchUpdates({ () throws(BatchUpdateViolation) in
                do {
                    try updates()
                } catch let violation as BatchUpdateViolation {
                    throw violation
                } catch {
                    thrown = error
                    throw .batchAborted(reason: "\(error)")
                }
            }, completion: completion)
        } catch {
            // A batch abandoned for the caller's own error reports that error.
            throw thrown ?? error
        }
    }

    /// Ends the batch animations in flight and calls their completions in order.
    public func finishBatchAnimations() {
        let completions = pendingCompletions
        pendingCompletions = []
        animatingBatches = 0
        for completion in completions { completion(true) }
    }

    func readCell(at path: ItemPath, from dataSource: any HeadlessListDataSource<Cell, Header>) -> Cell {
        cellReads += 1
        return dataSource.cell(at: path)
    }

    /// With ``Realization/visible(margin:)``: reads the cells that came near the viewport and
    /// lets go of those that left it (their selection stays, as UIKit keeps it by index path).
    func realizeVisibleCells() {
        guard case let .visible(margin) = realization, var store, let dataSource else { return }
        let wanted = Set(items(inRows: max(0, contentOffset - margin)..<(contentOffset + viewportRows + margin)))
        for path in store.realized.keys where !wanted.contains(path) { store.realized[path] = nil }
        for path in wanted where store.realized[path] == nil {
            store.realized[path] = DisplayedCell(content: readCell(at: path, from: dataSource), isSelected: false)
        }
        self.store = store
    }
}
