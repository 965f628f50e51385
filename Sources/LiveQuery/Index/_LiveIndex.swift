import Foundation
import ListDiff

/// A row's state after a transaction: `nil` when it is not in the result (deleted, or no longer
/// matching the filter).
struct _RowChange: Sendable {
    var rowid: Int64
    var new: IndexEntry?
}

/// What one transaction did to the result, in the result's own terms.
struct _AppliedChanges: Sendable {
    var before: _ResultSnapshot
    var after: _ResultSnapshot
    var changes: ListChanges
}

/// Turns a stored identity into the form lookups use (`ID(identityValue:)?.identityValue`), or
/// `nil` when it does not decode.
typealias _IdentityCanonicalizer = @Sendable (SQLValue) -> SQLValue?

/// The mutable index of a live query's result: the counted tree of rows, the counted tree of
/// sections, and the maps from a row to its leaf. Changed on the writer's queue; published states
/// are read anywhere.
///
/// `@unchecked Sendable`: every stored property is read and written under `lock` (the writer
/// applies transactions under it, identity lookups from other threads take it).
final class _LiveIndex: @unchecked Sendable {
    private let lock = NSLock()
    let source: UInt64
    private var layout: _ResultLayout
    private var rows: _CountedTree<IndexEntry>
    private var sectionTree: _CountedTree<SectionEntry>?
    /// rowid → leaf id of every row.
    private var leafOfRow: _RowidMap
    /// Canonical identity → rowid, when the identity is not the rowid.
    private var rowOfIdentity: [SQLValue: Int64]
    private var generation: UInt64 = 0
    private var latest: _ResultSnapshot?
    private let canonicalIdentity: _IdentityCanonicalizer
    /// Whether the index holds every row of the result (not only the first screen).
    private var isComplete: Bool
    /// The rows of the SQL result the list leaves out, remembered so they can enter it later.
    private var leftOut: _LeftOutSet
    /// What ``leftOut`` is, as published (recomputed when it changes).
    private var leftOutSummary: LeftOutRows
    /// The identity type's name, for the summary.
    private let identityType: String

    private static let sourceLock = NSLock()
    nonisolated(unsafe) private static var lastSource: UInt64 = 0

    private struct MapTracker: _LeafTracker {
        var map: _RowidMap
        mutating func element(_ element: IndexEntry, movedTo leaf: UInt32) { map[element.rowid] = leaf }
    }

    /// Builds the index of `entries`, already in `layout`'s order (or in fetch order, numbered
    /// by `rowid`, for a refetched result). Entries whose identity does not decode, or repeats
    /// one before them, are left out (see ``initialProblems``).
    convenience init(layout: _ResultLayout, canonicalIdentity: @escaping _IdentityCanonicalizer, identityType: String = "SQLValue",
                     sorted entries: [IndexEntry], isComplete: Bool = true) {
        var builder = _IndexBuilder(layout: layout, canonicalIdentity: canonicalIdentity)
        for entry in entries { builder.append(entry) }
        self.init(builder: builder, identityType: identityType, isComplete: isComplete)
    }

    /// Builds the index of the rows `builder` gathered.
    init(builder: _IndexBuilder, identityType: String = "SQLValue", isComplete: Bool = true) {
        source = Self.sourceLock.withLock {
            Self.lastSource += 1
            return Self.lastSource
        }
        layout = builder.layout
        canonicalIdentity = builder.canonicalIdentity
        self.isComplete = isComplete
        self.identityType = identityType
        leftOut = builder.leftOut
        leftOutSummary = builder.leftOut.summary(layout: builder.layout, identityType: identityType)
        (rows, sectionTree, leafOfRow, rowOfIdentity) = Self.build(builder)
        _ = publish()
    }

    private typealias Built = (_CountedTree<IndexEntry>, _CountedTree<SectionEntry>?, _RowidMap, [SQLValue: Int64])

    private static func build(_ builder: _IndexBuilder) -> Built {
        var builder = builder
        let leaves = builder.finishLeaves()
        // Room for 1/64 more rows (0.2 B a row): the first rows that enter the result do not
        // rehash the whole map (10 ms at 500k rows) — only growth past that does, amortized.
        var tracker = MapTracker(map: _RowidMap(capacity: builder.count + builder.count / 64 + 16))
        let tree = _CountedTree(leaves: leaves, tracker: &tracker)
        let sections = builder.layout.isSectioned ? _CountedTree(sorted: builder.sections) : nil
        return (tree, sections, tracker.map, builder.rowOfIdentity)
    }

    /// The latest state, published as is.
    var current: _ResultSnapshot {
        lock.withLock {
            // `latest` is set by every publication, the first one in `init`.
            latest ?? publishLocked()
        }
    }

    private func publish() -> _ResultSnapshot {
        lock.withLock { publishLocked() }
    }

    private func publishLocked() -> _ResultSnapshot {
        generation += 1
        let sections: _SectionsSnapshot
        if var tree = sectionTree {
            sections = .tree(tree.publish())
            sectionTree = tree
        } else {
            sections = .flat(count: rows.count)
        }
        let snapshot = _ResultSnapshot(
            rows: rows.publish(), sections: sections, stateID: ListStateID(source: source, generation: generation),
            layout: layout, index: self, isComplete: isComplete, leftOut: leftOutSummary)
        latest = snapshot
        return snapshot
    }

    /// The entry of `rowid` now, or `nil`. O(leaf) through the rowid map.
    private func entryLocked(forRowid rowid: Int64) -> IndexEntry? {
        guard let leafID = leafOfRow[rowid], let leaf = rows.leaf(leafID) else { return nil }
        return leaf.elements.first { $0.rowid == rowid }
    }

    func entry(forRowid rowid: Int64) -> IndexEntry? {
        lock.withLock { entryLocked(forRowid: rowid) }
    }

    /// The current row whose canonical identity is `identity`. O(log n).
    func entry(ofIdentity identity: SQLValue) -> IndexEntry? {
        lock.withLock {
            if layout.identityIsRowid {
                guard case let .integer(rowid) = identity else { return nil }
                return entryLocked(forRowid: rowid)
            }
            return rowOfIdentity[identity].flatMap { entryLocked(forRowid: $0) }
        }
    }

    /// The rows of the index, other than those in `excluded`, that hold the identity of one of
    /// `entries` under another rowid. O(k) for k entries.
    func otherHolders(ofIdentitiesOf entries: some Sequence<IndexEntry>, excluding excluded: Set<Int64>) -> Set<Int64> {
        guard !layout.identityIsRowid else { return [] }
        return lock.withLock {
            var holders = Set<Int64>()
            for entry in entries {
                guard let identity = canonicalIdentity(layout.identity(of: entry)), let holder = rowOfIdentity[identity],
                      holder != entry.rowid, !excluded.contains(holder) else { continue }
                holders.insert(holder)
            }
            return holders
        }
    }

    /// The position of the row whose canonical identity is `identity` in `snapshot`: O(log n)
    /// when the row has not changed since `snapshot` was published, O(n) otherwise.
    func position(ofIdentity identity: SQLValue, in snapshot: _ResultSnapshot) -> Int? {
        let current: IndexEntry? = lock.withLock {
            let rowid: Int64?
            if layout.identityIsRowid {
                guard case let .integer(value) = identity else { return nil }
                rowid = value
            } else {
                rowid = rowOfIdentity[identity]
            }
            return rowid.flatMap { entryLocked(forRowid: $0) }
        }
        if let current, let position = snapshot.position(of: current) { return position }
        // The row changed (or left) since `snapshot`: look for it the slow way.
        var position = 0, found: Int?
        snapshot.rows.forEach(in: 0..<snapshot.count) { entry in
            if canonicalIdentity(snapshot.layout.identity(of: entry)) == identity {
                found = position
                return false
            }
            position += 1
            return true
        }
        return found
    }

    // MARK: - Changes

    private enum Kind {
        case removed, reloaded, moved, added
    }

    private struct Classified {
        var kind: Kind
        var old: IndexEntry?
        var new: IndexEntry?
        var oldPath: ItemPath?
        var oldPosition: Int?
    }

    /// Applies one transaction's row changes and returns the changes from the state before to
    /// the state after, both published. O(k log n) for k changed rows.
    func apply(_ changes: [_RowChange]) -> _AppliedChanges {
        lock.withLock { applyLocked(changes) }
    }

    private func applyLocked(_ changes: [_RowChange]) -> _AppliedChanges {
        let before = latest ?? publishLocked()
        let order = _RowOrder(comparator: layout.comparator)
        var classified: [Classified] = []
        classified.reserveCapacity(changes.count)
        var seen = Set<Int64>()
        let hadLeftOut = !leftOut.isEmpty
        for change in changes where seen.insert(change.rowid).inserted {
            // A left-out row that was re-read is classified again from scratch: it enters the
            // list below if its identity is now free and valid, or is left out again.
            leftOut.remove(change.rowid)
            let old = entryLocked(forRowid: change.rowid)
            switch (old, change.new) {
            case (nil, nil):
                continue
            case let (nil, new?):
                classified.append(Classified(kind: .added, new: new))
            case let (old?, new):
                let position = before.position(of: old) ?? 0
                let path = before.path(of: old, at: position)
                guard let new else {
                    classified.append(Classified(kind: .removed, old: old, oldPath: path, oldPosition: position))
                    continue
                }
                if !layout.identityIsRowid && layout.identity(of: old) != layout.identity(of: new) {
                    // Another row now has this rowid (a REPLACE): the old one left, a new one came.
                    classified.append(Classified(kind: .removed, old: old, oldPath: path, oldPosition: position))
                    classified.append(Classified(kind: .added, new: new))
                    continue
                }
                let samePlace = order.compare(old, new) == 0 && layout.sectionKey(of: old) == layout.sectionKey(of: new)
                if samePlace {
                    if old.token != new.token || old.key != new.key {
                        classified.append(Classified(kind: .reloaded, old: old, new: new, oldPath: path, oldPosition: position))
                    }
                } else {
                    classified.append(Classified(kind: .moved, old: old, new: new, oldPath: path, oldPosition: position))
                }
            }
        }

        // Remove every old entry first, so that rows trading places or identities never collide.
        var tracker = MapTracker(map: _RowidMap())
        swap(&tracker.map, &leafOfRow)
        var freedIdentities: [SQLValue] = []
        for item in classified where item.kind == .removed || item.kind == .moved {
            guard let old = item.old else { continue }
            rows.remove(old, order: order, tracker: &tracker)
            tracker.map[old.rowid] = nil
            adjustSection(layout.sectionKey(of: old), by: -1)
            if !layout.identityIsRowid, let identity = canonicalIdentity(layout.identity(of: old)) {
                rowOfIdentity[identity] = nil
                freedIdentities.append(identity)
            }
        }
        for item in classified where item.kind == .reloaded {
            guard let old = item.old, let new = item.new else { continue }
            rows.replace(old, with: new, order: order)
        }
        var insertedRowids = Set<Int64>()
        func insert(_ index: Int) {
            guard let new = classified[index].new else { return }
            if !layout.identityIsRowid {
                guard let identity = canonicalIdentity(layout.identity(of: new)) else {
                    leftOut.insertInvalid(new)
                    classified[index].new = nil   // left out: a moved row becomes a removed one
                    return
                }
                if let holder = rowOfIdentity[identity], holder != new.rowid {
                    leftOut.insertDuplicate(new, identity: identity)
                    classified[index].new = nil
                    return
                }
                rowOfIdentity[identity] = new.rowid
            }
            rows.insert(new, order: order, tracker: &tracker)
            insertedRowids.insert(new.rowid)
            adjustSection(layout.sectionKey(of: new), by: +1)
        }
        for index in classified.indices where classified[index].kind == .moved || classified[index].kind == .added {
            insert(index)
        }
        // An identity no row holds any more lets the first row left out for holding it too
        // enter the list: SQLite returns it, and its entry is current (any write to it would have
        // been re-read above).
        for identity in freedIdentities where rowOfIdentity[identity] == nil {
            guard let entry = leftOut.takeFirst(withIdentity: identity, order: order) else { continue }
            classified.append(Classified(kind: .added, new: entry))
            insert(classified.count - 1)
        }
        swap(&tracker.map, &leafOfRow)
        if hadLeftOut || !leftOut.isEmpty {
            leftOutSummary = leftOut.summary(layout: layout, identityType: identityType)
        }
        let after = publishLocked()

        // Sections: the keys touched, before and after. Sections keep their relative order.
        var logical = ListChanges()
        var touchedKeys = Set<SQLValue>()
        for item in classified {
            if let old = item.old { touchedKeys.insert(layout.sectionKey(of: old)) }
            if let new = item.new { touchedKeys.insert(layout.sectionKey(of: new)) }
        }
        var deletedSections = Set<Int>(), insertedSections = Set<Int>()
        if layout.isSectioned {
            for key in touchedKeys {
                let was = before.sectionIndex(of: key), now = after.sectionIndex(of: key)
                if was.found && !now.found { deletedSections.insert(was.index) }
                if !was.found && now.found { insertedSections.insert(now.index) }
            }
        }
        logical.sectionDeletes = deletedSections.sorted()
        logical.sectionInserts = insertedSections.sorted()

        // Rows whose identity left and came back under another rowid (REPLACE, a rowid change)
        // are one row that moved, not a delete and an insert.
        var removedByIdentity: [SQLValue: Int] = [:]
        if !layout.identityIsRowid {
            for (index, item) in classified.enumerated() where item.kind == .removed || (item.kind == .moved && item.new == nil) {
                if let old = item.old, let identity = canonicalIdentity(layout.identity(of: old)) { removedByIdentity[identity] = index }
            }
        }
        var pairedRemovals = Set<Int>()
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
        for item in classified {
            switch item.kind {
            case .reloaded:
                if let path = item.oldPath { logical.itemReloads.append(path) }
            case .moved:
                guard let old = item.old, let oldPath = item.oldPath else { continue }
                if let new = item.new, insertedRowids.contains(new.rowid) {
                    recordMove(from: oldPath, old: old, to: new)
                }
            case .added:
                guard let new = item.new, insertedRowids.contains(new.rowid) else { continue }
                if let identity = canonicalIdentity(layout.identity(of: new)), let index = removedByIdentity[identity], let old = classified[index].old,
                   let oldPath = classified[index].oldPath {
                    pairedRemovals.insert(index)
                    recordMove(from: oldPath, old: old, to: new)
                } else if let path = newPath(of: new) {
                    logical.itemInserts.append(path)
                }
            case .removed:
                break
            }
        }
        for (index, item) in classified.enumerated() where !pairedRemovals.contains(index) {
            let isRemoval = item.kind == .removed || (item.kind == .moved && (item.new == nil || !insertedRowids.contains(item.new?.rowid ?? 0)))
            if isRemoval, let path = item.oldPath { logical.itemDeletes.append(path) }
        }
        // Nothing to deliver (no row and no left-out row changed): the state before stays the
        // newest one, so that the next changeset starts where the last delivered one ended.
        if logical.isEmpty && after.leftOut == before.leftOut { latest = before }
        return _AppliedChanges(before: before, after: latest ?? after, changes: logical)
    }

    private func adjustSection(_ key: SQLValue, by delta: Int) {
        // Positional sections only belong to refetched results, which are never changed in place.
        guard var tree = sectionTree, let rule = layout.sectionRule, !layout.sectionsArePositional else { return }
        sectionTree = nil   // keeps the tree uniquely held while it changes
        defer { sectionTree = tree }
        let order = _SectionOrder(rule: rule)
        let probe = SectionEntry(key: key, count: 0)
        let (position, found) = tree.current.lowerBound(of: probe, order: order)
        var tracker = _NoLeafTracker<SectionEntry>()
        if found {
            let existing = tree.current.element(at: position)
            let count = existing.count + delta
            if count <= 0 {
                tree.remove(existing, order: order, tracker: &tracker)
            } else {
                tree.replace(existing, with: SectionEntry(key: existing.key, count: count), order: order)
            }
        } else if delta > 0 {
            tree.insert(SectionEntry(key: key, count: delta), order: order, tracker: &tracker)
        }
    }

    /// Makes `snapshot` — the state delivered last, when a refetch found nothing new — the newest
    /// state again, so that the next changeset starts from it.
    func keepDelivered(_ snapshot: _ResultSnapshot) {
        lock.withLock { latest = snapshot }
    }

    /// Replaces the whole result (a refetch, or a new request) and returns the states before
    /// and after, with the identities left out as duplicates.
    func replaceAll(with builder: _IndexBuilder) -> (before: _ResultSnapshot, after: _ResultSnapshot) {
        let built = Self.build(builder)
        return lock.withLock {
            let before = latest ?? publishLocked()
            self.layout = builder.layout
            isComplete = true
            (rows, sectionTree, leafOfRow, rowOfIdentity) = built
            leftOut = builder.leftOut
            leftOutSummary = leftOut.summary(layout: layout, identityType: identityType)
            let after = publishLocked()
            return (before, after)
        }
    }

    /// Up to three identity values, among the rows left out as invalid, that satisfy `predicate`.
    func invalidIdentities(where predicate: (SQLValue) -> Bool) -> [SQLValue] {
        lock.withLock { leftOut.invalidIdentities(layout: layout, limit: LeftOutRows.exampleLimit, where: predicate) }
    }

    /// A builder for this index's rows (its identity rules), under `layout`.
    func makeBuilder(layout: _ResultLayout) -> _IndexBuilder {
        _IndexBuilder(layout: layout, canonicalIdentity: canonicalIdentity)
    }
}
