import ListDiff

/// The operations of a batch, recorded as they are called and checked when the batch closes.
struct PendingBatch {
    var changes = ListChanges()
    var itemReconfigures: [ItemPath] = []
}

extension HeadlessListView {
    /// Inserts sections at indices of the state after the batch.
    public func insertSections(_ sections: [Int]) throws(BatchUpdateViolation) {
        try record { $0.changes.sectionInserts += sections }
    }

    /// Deletes sections at indices of the state before the batch.
    public func deleteSections(_ sections: [Int]) throws(BatchUpdateViolation) {
        try record { $0.changes.sectionDeletes += sections }
    }

    /// Reloads sections at indices of the state before the batch.
    public func reloadSections(_ sections: [Int]) throws(BatchUpdateViolation) {
        try record { $0.changes.sectionReloads += sections }
    }

    /// Moves a section from an index before the batch to an index after it.
    public func moveSection(_ section: Int, toSection newSection: Int) throws(BatchUpdateViolation) {
        try record { $0.changes.sectionMoves.append(Move(from: section, to: newSection)) }
    }

    /// Inserts items at paths of the state after the batch.
    public func insertItems(at paths: [ItemPath]) throws(BatchUpdateViolation) {
        try record { $0.changes.itemInserts += paths }
    }

    /// Deletes items at paths of the state before the batch.
    public func deleteItems(at paths: [ItemPath]) throws(BatchUpdateViolation) {
        try record { $0.changes.itemDeletes += paths }
    }

    /// Reloads items at paths of the state before the batch: their cells are replaced (selection
    /// is lost, §4.5).
    public func reloadItems(at paths: [ItemPath]) throws(BatchUpdateViolation) {
        try record { $0.changes.itemReloads += paths }
    }

    /// Reconfigures items at paths of the state before the batch: their cells re-read their
    /// content in place and keep their selection (§4.6).
    public func reconfigureItems(at paths: [ItemPath]) throws(BatchUpdateViolation) {
        try record { $0.itemReconfigures += paths }
    }

    /// Moves an item from a path before the batch to a path after it.
    public func moveItem(at path: ItemPath, to newPath: ItemPath) throws(BatchUpdateViolation) {
        try record { $0.changes.itemMoves.append(Move(from: path, to: newPath)) }
    }

    /// Records every operation of `changes` in the open batch (or in a batch of its own).
    public func apply(_ changes: ListChanges) throws(BatchUpdateViolation) {
        try record { pending in
            pending.changes.sectionDeletes += changes.sectionDeletes
            pending.changes.sectionInserts += changes.sectionInserts
            pending.changes.sectionMoves += changes.sectionMoves
            pending.changes.sectionReloads += changes.sectionReloads
            pending.changes.itemDeletes += changes.itemDeletes
            pending.changes.itemInserts += changes.itemInserts
            pending.changes.itemMoves += changes.itemMoves
            pending.changes.itemReloads += changes.itemReloads
        }
    }

    /// Outside a batch, UIKit wraps a single call in a batch of its own.
    private func record(_ change: (inout PendingBatch) -> Void) throws(BatchUpdateViolation) {
        if batchDepth > 0 {
            change(&pending)
        } else {
            try performBatchUpdates { () throws(BatchUpdateViolation) in change(&pending) }
        }
    }
}
