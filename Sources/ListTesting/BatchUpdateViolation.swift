import ListDiff

/// A batch update that UIKit would reject with `NSInternalInconsistencyException`, or that would
/// silently corrupt a real view (raised in strict mode).
///
/// Each case names the rule of docs/UIKIT-BATCH-RULES.md it enforces and carries the indices involved,
/// so that a failing test says exactly which operation was wrong.
public enum BatchUpdateViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// An operation of a batch, as named in messages.
    public enum Operation: String, Hashable, Sendable {
        case delete, insert, reload, reconfigure, moveSource = "move source"
        case moveDestination = "move destination", select, scroll
    }

    /// §2.1: the section count after the batch is not the count before plus inserts minus deletes.
    case sectionCountMismatch(before: Int, after: Int, inserted: Int, deleted: Int)
    /// §2.2: an item count after the batch does not add up for a section that survives.
    case itemCountMismatch(section: Int, before: Int, after: Int, inserted: Int, deleted: Int, movedIn: Int, movedOut: Int)
    /// §2.3: a section index outside the state it refers to.
    case sectionOutOfRange(Operation, section: Int, count: Int)
    /// §2.3: an item index path outside the state it refers to.
    case itemOutOfRange(Operation, path: ItemPath, sectionCount: Int, itemCount: Int?)
    /// §2.4: the same old path is deleted and moved.
    case itemDeletedAndMoved(ItemPath)
    /// §2.4, section form.
    case sectionDeletedAndMoved(Int)
    /// §2.5: the same new path is inserted and a move destination.
    case itemInsertedAndMovedTo(ItemPath)
    /// §2.5, section form.
    case sectionInsertedAndMovedTo(Int)
    /// §2.6: the same old path is deleted and reloaded.
    case itemDeletedAndReloaded(ItemPath)
    /// §2.6, section form.
    case sectionDeletedAndReloaded(Int)
    /// §2.7: the same item is reloaded (or reconfigured) and moved.
    case itemReloadedAndMoved(ItemPath)
    /// §2.7, section form.
    case sectionReloadedAndMoved(Int)
    /// §2.8 and §2.9: the same operation twice on one item (two deletes, two moves from or to it…).
    case duplicateItemOperation(Operation, ItemPath)
    /// §2.8 and §2.9, section form.
    case duplicateSectionOperation(Operation, section: Int)
    /// §2.10: an item moved out of a section deleted in the same batch.
    case moveOutOfDeletedSection(ItemPath)
    /// §2.10: an item moved into a section inserted in the same batch (its items come with it).
    case moveIntoInsertedSection(ItemPath)
    /// §2.10 (strict mode): an item inserted into a section inserted in the same batch; UIKit
    /// ignores it in its count check and leaves a stale cell.
    case insertIntoInsertedSection(ItemPath)
    /// §2.10: an item reloaded or reconfigured inside a section deleted in the same batch.
    case itemOperationInDeletedSection(Operation, ItemPath)
    /// §2.11: an item operation inside a section that is moved or reloaded in the same batch.
    case itemOperationInMovedOrReloadedSection(Operation, ItemPath)
    /// §1.6: `reloadData` called while a batch is open.
    case reloadDataInsideBatch
    /// §1.6 (strict mode, collection view): a batch opened right after `reloadData`, before the
    /// view laid out again.
    case batchRightAfterReloadData
    /// §4.4: a programmatic scroll requested while a batch is open.
    case scrollDuringBatch
    /// The view has no data source to read from.
    case missingDataSource
    /// AppKit (sequential deletes, inserts, then moves): the counts the data source reports
    /// after the batch are not those the operations lead to; `section` is `nil` for the number
    /// of sections.
    case sequentialCountMismatch(section: Int?, expected: Int, actual: Int)
    /// The batch's update closure threw an error of its own: nothing was applied.
    case batchAborted(reason: String)

    public var description: String {
        switch self {
        case let .sectionCountMismatch(before, after, inserted, deleted):
            return "invalid number of sections: \(after) after the update, expected \(before) before + \(inserted) inserted - \(deleted) deleted (§2.1)"
        case let .itemCountMismatch(section, before, after, inserted, deleted, movedIn, movedOut):
            return "invalid number of items in section \(section): \(after) after the update, expected \(before) before + \(inserted) inserted - \(deleted) deleted + \(movedIn) moved in - \(movedOut) moved out (§2.2)"
        case let .sectionOutOfRange(operation, section, count):
            return "\(operation.rawValue) of section \(section), but there are only \(count) sections (§2.3)"
        case let .itemOutOfRange(operation, path, sectionCount, itemCount):
            if let itemCount {
                return "\(operation.rawValue) of item \(path), but section \(path.section) has only \(itemCount) items (§2.3)"
            }
            return "\(operation.rawValue) of item \(path), but there are only \(sectionCount) sections (§2.3)"
        case let .itemDeletedAndMoved(path):
            return "attempt to delete and move the same item \(path) (§2.4)"
        case let .sectionDeletedAndMoved(section):
            return "attempt to delete and move the same section \(section) (§2.4)"
        case let .itemInsertedAndMovedTo(path):
            return "attempt to insert and move an item to the same index path \(path) (§2.5)"
        case let .sectionInsertedAndMovedTo(section):
            return "attempt to insert and move a section to the same index \(section) (§2.5)"
        case let .itemDeletedAndReloaded(path):
            return "attempt to delete and reload the same index path \(path) (§2.6)"
        case let .sectionDeletedAndReloaded(section):
            return "attempt to delete and reload the same section \(section) (§2.6)"
        case let .itemReloadedAndMoved(path):
            return "attempt to reload and move the same item \(path) (§2.7)"
        case let .sectionReloadedAndMoved(section):
            return "attempt to reload and move the same section \(section) (§2.7)"
        case let .duplicateItemOperation(operation, path):
            return "item \(path) is the target of more than one \(operation.rawValue) (§2.8/§2.9)"
        case let .duplicateSectionOperation(operation, section):
            return "section \(section) is the target of more than one \(operation.rawValue) (§2.8/§2.9)"
        case let .moveOutOfDeletedSection(path):
            return "attempt to move item \(path) out of a section deleted in the same update (§2.10)"
        case let .moveIntoInsertedSection(path):
            return "attempt to move an item to \(path), inside a section inserted in the same update (§2.10)"
        case let .insertIntoInsertedSection(path):
            return "item \(path) inserted into a section inserted in the same update; UIKit ignores it and keeps a stale cell (§2.10, strict)"
        case let .itemOperationInDeletedSection(operation, path):
            return "\(operation.rawValue) of item \(path) inside a section deleted in the same update (§2.10)"
        case let .itemOperationInMovedOrReloadedSection(operation, path):
            return "\(operation.rawValue) of item \(path) inside a section moved or reloaded in the same update (§2.11)"
        case .reloadDataInsideBatch:
            return "reloadData called inside a batch update (§1.6)"
        case .batchRightAfterReloadData:
            return "batch update opened right after reloadData, before layout (§1.6, strict)"
        case .scrollDuringBatch:
            return "programmatic scroll requested while a batch update is open (§4.4)"
        case .missingDataSource:
            return "the list view has no data source"
        case let .batchAborted(reason):
            return "the batch's updates threw (\(reason)); nothing was applied"
        case let .sequentialCountMismatch(section, expected, actual):
            let what = section.map { "items in section \($0)" } ?? "sections"
            return "invalid number of \(what): the data source has \(actual), the sequential update leads to \(expected) (NSCollectionView)"
        }
    }
}
