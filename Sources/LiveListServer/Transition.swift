import ListDiff
import LiveListWire
import LiveQueryCore

/// A change of a live query's result from one state to another (one commit's, or several
/// composed), made ready for the wire once for every subscriber: the identities of the rows it
/// touches, the positions they land at, and which rows of any window it brings in.
struct Transition {
    let changes: ListChanges
    /// The sections of the state the changes lead from (its rows are not needed: every row the
    /// message names is in the new state).
    let old: LiveResultShape
    let new: LiveResult<SQLValue>
    let insertedSectionKeys: [WireValue]
    let insertedIDs: [WireValue]
    let movedIDs: [WireValue]
    let reloadedIDs: [WireValue]
    let windowRows: WindowRows

    /// - Complexity: O(c log c + c log n) for c changes in results of n rows.
    init(changes: ListChanges, old: LiveResultShape, new: LiveResult<SQLValue>) {
        self.changes = changes
        self.old = old
        self.new = new
        insertedSectionKeys = changes.sectionInserts.map { new.sectionInfo(at: $0).key.wire }
        insertedIDs = changes.itemInserts.map { new.item(at: $0).id.wire }
        movedIDs = changes.itemMoves.map { new.item(at: $0.to).id.wire }
        let mapping = PathMapping(changes)
        // A reloaded row stays in the list: its identity is the new state's row it becomes.
        reloadedIDs = changes.itemReloads.compactMap { path in mapping.newPath(ofOld: path).map { new.item(at: $0).id.wire } }
        var changed: [Int] = []
        changed.reserveCapacity(changes.itemInserts.count + changes.itemMoves.count + changes.itemReloads.count)
        for path in changes.itemInserts { if let position = new.position(of: path) { changed.append(position) } }
        for move in changes.itemMoves { if let position = new.position(of: move.to) { changed.append(position) } }
        for path in changes.itemReloads {
            if let target = mapping.newPath(ofOld: path), let position = new.position(of: target) { changed.append(position) }
        }
        changed.sort()
        windowRows = WindowRows(changed: changed, sectionsMoved: !changes.sectionMoves.isEmpty) { position in
            guard let path = new.itemPath(ofPosition: position), let oldPath = mapping.oldPath(ofNew: path) else { return nil }
            return old.position(of: oldPath)
        }
    }

    /// The rows of `window` (at the new state) a client holding `held` (at the old one) lacks.
    func missing(window: Range<Int>, held: Range<Int>) -> [Int] {
        windowRows.missing(window: window.clamped(to: 0..<new.count), held: held.clamped(to: 0..<old.count))
    }

    /// The message, for rows already made.
    func message(from: WireVersion, to: WireVersion, rows: [WireRow], observedAt: Int64?) -> WireChanges {
        WireChanges(sub: 0, from: from, to: to, changes: changes, insertedSectionKeys: insertedSectionKeys, insertedIDs: insertedIDs,
                    movedIDs: movedIDs, reloadedIDs: reloadedIDs, rows: rows, observedAt: observedAt)
    }
}
