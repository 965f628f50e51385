import ListDiff

/// A list view without a screen that behaves like `UICollectionView`/`UITableView` where it
/// matters for correctness: it caches section and item counts, opens and closes batch updates,
/// checks every batch against the rules of uikit-batch-rules.md and throws a typed
/// ``BatchUpdateViolation`` where UIKit would raise (in strict mode also where UIKit only corrupts
/// itself), moves cells as UIKit does (so a stale or misplaced cell shows up as wrong content),
/// and tracks a viewport, a content offset, selection and a programmatic scroll animation.
///
/// ```swift
/// let dataSource = SnapshotDataSource(old)
/// let view = HeadlessListView(dataSource: dataSource)
/// view.layoutIfNeeded()
/// try view.apply(Changeset(from: old, to: new), to: dataSource)
/// #expect(view.staleCells().isEmpty)
/// ```
///
/// Geometry is counted in rows: every item is one row, every section header
/// ``sectionHeaderRows`` rows.
@MainActor
public final class HeadlessListView<Cell, Header> {
    /// Which UIKit view to imitate where their behaviour differs.
    public enum Kind: Sendable {
        case collectionView, tableView
    }

    /// A cell as the view holds it: the content it was configured with and its selection.
    public struct DisplayedCell {
        /// What the cell shows; it only changes when the cell is created, reloaded or reconfigured.
        public var content: Cell
        /// Whether the cell is selected.
        public var isSelected: Bool
    }

    /// A section as the view holds it.
    public struct DisplayedSection {
        /// What the header shows.
        public var header: Header
        /// The cells in display order.
        public var cells: [DisplayedCell]
    }

    /// What the view reads counts and content from.
    public var dataSource: (any HeadlessListDataSource<Cell, Header>)?
    /// Which view to imitate.
    public let kind: Kind
    /// Whether to raise also where UIKit only corrupts itself (stale cells, batch after reload).
    public var isStrict: Bool
    /// The height of the viewport, in rows.
    public var viewportRows: Int
    /// The height of each section header, in rows (0: no headers).
    public var sectionHeaderRows: Int
    /// When `false`, batch completions wait for ``finishBatchAnimations()``, so tests can deliver
    /// updates while a batch animation is in flight.
    public var completesBatchAnimationsImmediately = true
    /// Called when a programmatic scroll animation ends (`scrollViewDidEndScrollingAnimation`).
    public var onScrollAnimationEnded: (@MainActor () -> Void)?

    /// The sections and cells on display; `nil` until the view has loaded (or after `reloadData`).
    public internal(set) var displayed: [DisplayedSection]?
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
        isStrict: Bool = true,
        viewportRows: Int = 20,
        sectionHeaderRows: Int = 0
    ) {
        self.dataSource = dataSource
        self.kind = kind
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

    /// The number of sections on display (loads the view if needed).
    public func numberOfSections() -> Int {
        layoutIfNeeded()
        return displayed?.count ?? 0
    }

    /// The number of items on display in `section` (loads the view if needed).
    public func numberOfItems(inSection section: Int) -> Int {
        layoutIfNeeded()
        return displayed?[section].cells.count ?? 0
    }

    /// The content of the displayed cell at `path`.
    public func cellContent(at path: ItemPath) -> Cell? {
        layoutIfNeeded()
        guard let displayed, displayed.indices.contains(path.section),
              displayed[path.section].cells.indices.contains(path.item) else { return nil }
        return displayed[path.section].cells[path.item].content
    }

    /// Loads counts and cells from the data source if they are not cached, as a layout pass does.
    public func layoutIfNeeded() {
        reloadedSinceLayout = false
        guard displayed == nil, let dataSource else { return }
        displayed = (0..<dataSource.numberOfSections()).map { section in
            readSection(section, from: dataSource)
        }
        clampContentOffset()
    }

    /// Drops every cached count and cell, as `reloadData` does: selection is cleared and a
    /// programmatic scroll animation stops without its end callback (§4.3).
    public func reloadData() throws(BatchUpdateViolation) {
        guard batchDepth == 0 else { throw .reloadDataInsideBatch }
        displayed = nil
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
                displayed = nil
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
            try commit(batch, dataSource: dataSource)
        } catch {
            displayed = nil
            throw error
        }
        pendingCompletions += completions
        batchCount += 1
        animatingBatches += 1
        if completesBatchAnimationsImmediately { finishBatchAnimations() }
    }

    /// Ends the batch animations in flight and calls their completions in order.
    public func finishBatchAnimations() {
        let completions = pendingCompletions
        pendingCompletions = []
        animatingBatches = 0
        for completion in completions { completion(true) }
    }

    func readSection(_ section: Int, from dataSource: any HeadlessListDataSource<Cell, Header>) -> DisplayedSection {
        let count = dataSource.numberOfItems(inSection: section)
        cellReads += count
        return DisplayedSection(
            header: dataSource.header(forSection: section),
            cells: (0..<count).map { DisplayedCell(content: dataSource.cell(at: ItemPath(section: section, item: $0)), isSelected: false) }
        )
    }

    func readCell(at path: ItemPath, from dataSource: any HeadlessListDataSource<Cell, Header>) -> Cell {
        cellReads += 1
        return dataSource.cell(at: path)
    }
}
