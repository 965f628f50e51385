import ListDiff

extension LiveIndex {
    /// How one transaction touched one row of the result, carrying what that kind of change
    /// needs: the entry before and its path in the state before for a row that was in the result,
    /// the entry after for a row that is in it now.
    enum TouchedRow {
        /// The row left the result: deleted, no longer matching, replaced under its rowid by
        /// another identity, or left out on its way to a new place.
        case removed(old: IndexEntry, at: ItemPath)
        /// The row kept its place (sort values and section) and its content changed.
        case reloaded(old: IndexEntry, new: IndexEntry, at: ItemPath)
        /// The row changed place: its sort values or its section changed.
        case moved(old: IndexEntry, new: IndexEntry, from: ItemPath)
        /// The row entered the result.
        case added(IndexEntry)
        /// The row was to enter the result and was left out: its identity does not decode, or
        /// another row holds it.
        case leftOut
    }

    /// The changes from `before` to `after`, the states on either side of the transaction that
    /// touched the rows `touched` (in that order). A row whose identity left under one rowid and
    /// came back under another (a REPLACE, a rowid change) is one row that moved, not a delete
    /// and an insert. O(k log n) for k touched rows.
    static func listChanges(of touched: [TouchedRow], from before: PublishedResult, to after: PublishedResult,
                            canonicalIdentity: IdentityCanonicalizer) -> ListChanges {
        let layout = after.layout
        var logical = ListChanges()
        let (deletedSections, insertedSections) = sectionChanges(of: touched, from: before, to: after)
        logical.sectionDeletes = deletedSections.sorted()
        logical.sectionInserts = insertedSections.sorted()

        var removedByIdentity: [SQLValue: Int] = [:]
        if !layout.identityIsRowid {
            for (index, row) in touched.enumerated() {
                guard case let .removed(old, _) = row, let identity = canonicalIdentity(layout.identity(of: old)) else { continue }
                removedByIdentity[identity] = index
            }
        }
        func newPath(of entry: IndexEntry) -> ItemPath? {
            guard let position = after.position(of: entry) else { return nil }
            return after.path(of: entry, at: position)
        }
        func recordMove(from oldPath: ItemPath, old: IndexEntry, to new: IndexEntry) {
            guard let toPath = newPath(of: new) else { return }
            if deletedSections.contains(oldPath.section) || insertedSections.contains(toPath.section) {
                logical.itemDeletes.append(oldPath)
                logical.itemInserts.append(toPath)
            } else {
                logical.itemMoves.append(Move(from: oldPath, to: toPath))
                if old.token != new.token || old.key != new.key { logical.itemReloads.append(oldPath) }
            }
        }
        var pairedRemovals = Set<Int>()
        for row in touched {
            switch row {
            case let .reloaded(_, _, path):
                logical.itemReloads.append(path)
            case let .moved(old, new, oldPath):
                recordMove(from: oldPath, old: old, to: new)
            case let .added(new):
                if !removedByIdentity.isEmpty, let identity = canonicalIdentity(layout.identity(of: new)),
                   let index = removedByIdentity[identity], case let .removed(old, oldPath) = touched[index] {
                    pairedRemovals.insert(index)
                    recordMove(from: oldPath, old: old, to: new)
                } else if let path = newPath(of: new) {
                    logical.itemInserts.append(path)
                }
            case .removed, .leftOut:
                continue
            }
        }
        for (index, row) in touched.enumerated() where !pairedRemovals.contains(index) {
            if case let .removed(_, path) = row { logical.itemDeletes.append(path) }
        }
        return logical
    }

    /// The sections that went away and the sections that appeared: of the section keys the
    /// touched rows had or have, those found only before, or only after. Sections keep their
    /// relative order, so no section moves.
    private static func sectionChanges(of touched: [TouchedRow], from before: PublishedResult,
                                       to after: PublishedResult) -> (deleted: Set<Int>, inserted: Set<Int>) {
        let layout = after.layout
        guard layout.isSectioned else { return ([], []) }
        var touchedKeys = Set<SQLValue>()
        for row in touched {
            switch row {
            case let .removed(old, _):
                touchedKeys.insert(layout.sectionKey(of: old))
            case let .reloaded(old, new, _), let .moved(old, new, _):
                touchedKeys.insert(layout.sectionKey(of: old))
                touchedKeys.insert(layout.sectionKey(of: new))
            case let .added(new):
                touchedKeys.insert(layout.sectionKey(of: new))
            case .leftOut:
                continue
            }
        }
        var deleted = Set<Int>(), inserted = Set<Int>()
        for key in touchedKeys {
            let was = before.sectionIndex(of: key), now = after.sectionIndex(of: key)
            if was.found && !now.found { deleted.insert(was.index) }
            if !was.found && now.found { inserted.insert(now.index) }
        }
        return (deleted, inserted)
    }
}
