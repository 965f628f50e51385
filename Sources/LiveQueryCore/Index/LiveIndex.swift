import Foundation
import ListDiff

/// A row's state after a transaction: `nil` when it is not in the result (deleted, or no longer
/// matching the filter).
struct RowChange: Sendable {
    var rowid: Int64
    var new: IndexEntry?
}

/// What one transaction did to the result, in the result's own terms.
struct AppliedChanges: Sendable {
    var before: PublishedResult
    var after: PublishedResult
    var changes: ListChanges
}

/// Turns a stored identity into the form lookups use (`ID(identityValue:)?.identityValue`), or
/// `nil` when it does not decode.
package typealias IdentityCanonicalizer = @Sendable (SQLValue) -> SQLValue?

/// The mutable index of a live query's result: the counted tree of rows, the counted tree of
/// sections, and the maps from a row to its leaf. Changed on the writer's queue; published states
/// are read anywhere.
///
/// `@unchecked Sendable`: everything the index changes is in `state`, one `Locked` value (the
/// writer applies transactions in it, identity lookups from other threads read it), and the rest
/// is constant. The box is not Sendable itself because its counted trees are changed in place;
/// the invariant is that no tree node leaves a `withLock` body but in a published
/// ``FrozenTree`` (whose nodes nothing writes any more, see `Epoch`) or as copied entries.
package final class LiveIndex: @unchecked Sendable {
    /// What the index changes: read and written only in `state.withLock`.
    private struct State {
        var layout: ResultLayout
        var rows: CountedTree<IndexEntry>
        var sectionTree: CountedTree<SectionEntry>?
        /// rowid → leaf id of every row.
        var leafOfRow: RowidMap
        /// Canonical identity → rowid, when the identity is not the rowid.
        var rowOfIdentity: [SQLValue: Int64]
        var generation: UInt64 = 0
        var latest: PublishedResult?
        /// Whether the index holds every row of the result (not only the first screen).
        var isComplete: Bool
        /// The rows of the SQL result the list leaves out, remembered so they can enter it later.
        var leftOut: LeftOutSet
        /// What ``leftOut`` is, as published (recomputed when it changes).
        var leftOutSummary: LeftOutRows

        /// The entry of `rowid` now, or `nil`. O(leaf) through the rowid map.
        func entry(forRowid rowid: Int64) -> IndexEntry? {
            guard let leafID = leafOfRow[rowid], let leaf = rows.leaf(leafID) else { return nil }
            return leaf.elements.first { $0.rowid == rowid }
        }

        /// Counts `delta` more rows in the section of `key` (adding or removing the section).
        mutating func adjustSection(_ key: SQLValue, by delta: Int) {
            // Positional sections only belong to refetched results, which are never changed in place.
            guard var tree = sectionTree, let ordering = layout.sections, !layout.sectionsArePositional else { return }
            sectionTree = nil   // keeps the tree uniquely held while it changes
            defer { sectionTree = tree }
            let order = SectionOrder(ordering: ordering)
            let probe = SectionEntry(key: key, count: 0)
            let (position, found) = tree.current.lowerBound(of: probe, order: order)
            var tracker = NoLeafTracker<SectionEntry>()
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
    }

    package let source: UInt64
    private let state: Locked<State>
    private let canonicalIdentity: IdentityCanonicalizer
    /// The identity type's name, for the summary.
    private let identityType: String

    private static let lastSource = Locked<UInt64>(0)

    private struct MapTracker: LeafTracker {
        var map: RowidMap
        mutating func element(_ element: IndexEntry, movedTo leaf: UInt32) { map[element.rowid] = leaf }
    }

    /// Builds the index of `entries`, already in `layout`'s order (or in fetch order, numbered
    /// by `rowid`, for a refetched result). Entries whose identity does not decode, or repeats
    /// one before them, are left out (see ``initialProblems``).
    package convenience init(layout: ResultLayout, canonicalIdentity: @escaping IdentityCanonicalizer, identityType: String = "SQLValue",
                     sorted entries: [IndexEntry], isComplete: Bool = true) {
        var builder = IndexBuilder(layout: layout, canonicalIdentity: canonicalIdentity)
        for entry in entries { builder.append(entry) }
        self.init(builder: builder, identityType: identityType, isComplete: isComplete)
    }

    /// Builds the index of the rows `builder` gathered.
    package init(builder: IndexBuilder, identityType: String = "SQLValue", isComplete: Bool = true) {
        source = Self.lastSource.withLock { last in
            last += 1
            return last
        }
        canonicalIdentity = builder.canonicalIdentity
        self.identityType = identityType
        let (rows, sectionTree, leafOfRow, rowOfIdentity) = Self.build(builder)
        state = Locked(State(layout: builder.layout, rows: rows, sectionTree: sectionTree, leafOfRow: leafOfRow,
                             rowOfIdentity: rowOfIdentity, isComplete: isComplete, leftOut: builder.leftOut,
                             leftOutSummary: builder.leftOut.summary(layout: builder.layout, identityType: identityType)))
        _ = publish()
    }

    private typealias Built = (CountedTree<IndexEntry>, CountedTree<SectionEntry>?, RowidMap, [SQLValue: Int64])

    private static func build(_ builder: IndexBuilder) -> Built {
        var builder = builder
        let leaves = builder.finishLeaves()
        // Room for 1/64 more rows (0.2 B a row): the first rows that enter the result do not
        // rehash the whole map (10 ms at 500k rows) — only growth past that does, amortized.
        var tracker = MapTracker(map: RowidMap(capacity: builder.count + builder.count / 64 + 16))
        let tree = CountedTree(leaves: leaves, tracker: &tracker)
        let sections = builder.layout.isSectioned ? CountedTree(sorted: builder.sections) : nil
        return (tree, sections, tracker.map, builder.rowOfIdentity)
    }

    /// The latest state, published as is.
    package var current: PublishedResult {
        state.withLock { state in
            // `latest` is set by every publication, the first one in `init`.
            state.latest ?? publishLocked(&state)
        }
    }

    private func publish() -> PublishedResult {
        state.withLock { publishLocked(&$0) }
    }

    private func publishLocked(_ state: inout State) -> PublishedResult {
        state.generation += 1
        let sections: PublishedSections
        if var tree = state.sectionTree {
            sections = .tree(tree.publish())
            state.sectionTree = tree
        } else {
            sections = .flat(count: state.rows.count)
        }
        let published = PublishedResult(
            rows: state.rows.publish(), sections: sections, stateID: ListStateID(source: source, generation: state.generation),
            layout: state.layout, index: self, isComplete: state.isComplete, leftOut: state.leftOutSummary)
        state.latest = published
        return published
    }

    package func entry(forRowid rowid: Int64) -> IndexEntry? {
        state.withLock { $0.entry(forRowid: rowid) }
    }

    /// The current row whose canonical identity is `identity`. O(log n).
    package func entry(ofIdentity identity: SQLValue) -> IndexEntry? {
        state.withLock { state in
            if state.layout.identityIsRowid {
                guard case let .integer(rowid) = identity else { return nil }
                return state.entry(forRowid: rowid)
            }
            return state.rowOfIdentity[identity].flatMap { state.entry(forRowid: $0) }
        }
    }

    /// The rows of the index, other than those in `excluded`, that hold the identity of one of
    /// `entries` under another rowid. O(k) for k entries.
    func otherHolders(ofIdentitiesOf entries: some Sequence<IndexEntry>, excluding excluded: Set<Int64>) -> Set<Int64> {
        state.withLock { state in
            guard !state.layout.identityIsRowid else { return [] }
            var holders = Set<Int64>()
            for entry in entries {
                guard let identity = canonicalIdentity(state.layout.identity(of: entry)), let holder = state.rowOfIdentity[identity],
                      holder != entry.rowid, !excluded.contains(holder) else { continue }
                holders.insert(holder)
            }
            return holders
        }
    }

    /// The position of the row whose canonical identity is `identity` in `snapshot`: O(log n)
    /// when the row has not changed since `snapshot` was published, O(n) otherwise.
    func position(ofIdentity identity: SQLValue, in snapshot: PublishedResult) -> Int? {
        let current: IndexEntry? = state.withLock { state in
            let rowid: Int64?
            if state.layout.identityIsRowid {
                guard case let .integer(value) = identity else { return nil }
                rowid = value
            } else {
                rowid = state.rowOfIdentity[identity]
            }
            return rowid.flatMap { state.entry(forRowid: $0) }
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

    /// Applies one transaction's row changes and returns the changes from the state before to
    /// the state after, both published. O(k log n) for k changed rows.
    func apply(_ changes: [RowChange]) -> AppliedChanges {
        state.withLock { applyLocked(changes, &$0) }
    }

    private func applyLocked(_ changes: [RowChange], _ state: inout State) -> AppliedChanges {
        let before = state.latest ?? publishLocked(&state)
        let order = RowOrder(ordering: state.layout.ordering)
        let hadLeftOut = !state.leftOut.isEmpty
        var touched = Self.classifyLocked(changes, in: before, order: order, &state)
        var tracker = MapTracker(map: RowidMap())
        swap(&tracker.map, &state.leafOfRow)
        // Remove every old entry first, so that rows trading places or identities never collide.
        let freedIdentities = removeOldEntriesLocked(of: touched, order: order, tracker: &tracker, &state)
        Self.reloadLocked(touched, order: order, &state)
        insertNewEntriesLocked(of: &touched, freedIdentities: freedIdentities, order: order, tracker: &tracker, &state)
        swap(&tracker.map, &state.leafOfRow)
        if hadLeftOut || !state.leftOut.isEmpty {
            state.leftOutSummary = state.leftOut.summary(layout: state.layout, identityType: identityType)
        }
        let after = publishLocked(&state)
        let logical = Self.listChanges(of: touched, from: before, to: after, canonicalIdentity: canonicalIdentity)
        // Nothing to deliver (no row and no left-out row changed): the state before stays the
        // newest one, so that the next changeset starts where the last delivered one ended.
        if logical.isEmpty && after.leftOut == before.leftOut { state.latest = before }
        return AppliedChanges(before: before, after: state.latest ?? after, changes: logical)
    }

    /// How each row `changes` name was touched, against `before` (the current state): a rowid's
    /// first change counts, and a row neither in the result before nor after is not touched. A
    /// left-out row that was re-read is forgotten, to be classified again from scratch: it
    /// enters the list if its identity is now free and valid, or is left out again.
    private static func classifyLocked(_ changes: [RowChange], in before: PublishedResult, order: RowOrder,
                                       _ state: inout State) -> [TouchedRow] {
        let layout = state.layout
        var touched: [TouchedRow] = []
        touched.reserveCapacity(changes.count)
        var seen = Set<Int64>()
        for change in changes where seen.insert(change.rowid).inserted {
            state.leftOut.remove(change.rowid)
            guard let old = state.entry(forRowid: change.rowid) else {
                if let new = change.new { touched.append(.added(new)) }
                continue
            }
            let path = before.path(of: old, at: before.position(of: old) ?? 0)
            guard let new = change.new else {
                touched.append(.removed(old: old, at: path))
                continue
            }
            if !layout.identityIsRowid && layout.identity(of: old) != layout.identity(of: new) {
                // Another row now has this rowid (a REPLACE): the old one left, a new one came.
                touched.append(.removed(old: old, at: path))
                touched.append(.added(new))
            } else if order.compare(old, new) != 0 || layout.sectionKey(of: old) != layout.sectionKey(of: new) {
                touched.append(.moved(old: old, new: new, from: path))
            } else if old.token != new.token || old.key != new.key {
                touched.append(.reloaded(old: old, new: new, at: path))
            }
        }
        return touched
    }

    /// Takes the old entries of the rows that left or moved out of the index, and returns the
    /// identities they held (none when the identity is the rowid).
    private func removeOldEntriesLocked(of touched: [TouchedRow], order: RowOrder, tracker: inout MapTracker,
                                        _ state: inout State) -> [SQLValue] {
        let layout = state.layout
        var freedIdentities: [SQLValue] = []
        for row in touched {
            let old: IndexEntry
            switch row {
            case let .removed(entry, _), let .moved(entry, _, _): old = entry
            case .reloaded, .added, .leftOut: continue
            }
            state.rows.remove(old, order: order, tracker: &tracker)
            tracker.map[old.rowid] = nil
            state.adjustSection(layout.sectionKey(of: old), by: -1)
            if !layout.identityIsRowid, let identity = canonicalIdentity(layout.identity(of: old)) {
                state.rowOfIdentity[identity] = nil
                freedIdentities.append(identity)
            }
        }
        return freedIdentities
    }

    /// Replaces, in place, the entries of the rows whose content changed.
    private static func reloadLocked(_ touched: [TouchedRow], order: RowOrder, _ state: inout State) {
        for row in touched {
            guard case let .reloaded(old, new, _) = row else { continue }
            state.rows.replace(old, with: new, order: order)
        }
    }

    /// Inserts the new entries of the rows that moved or entered; a row left out on the way is
    /// reclassified (a moved row becomes a removed one). Then an identity no row holds any more
    /// lets the first row left out for holding it too enter the list: SQLite returns it, and its
    /// entry is current (any write to it would have been re-read by this transaction).
    private func insertNewEntriesLocked(of touched: inout [TouchedRow], freedIdentities: [SQLValue], order: RowOrder,
                                        tracker: inout MapTracker, _ state: inout State) {
        for index in touched.indices {
            switch touched[index] {
            case let .moved(old, new, from):
                if !insertLocked(new, order: order, tracker: &tracker, &state) { touched[index] = .removed(old: old, at: from) }
            case let .added(new):
                if !insertLocked(new, order: order, tracker: &tracker, &state) { touched[index] = .leftOut }
            case .removed, .reloaded, .leftOut:
                continue
            }
        }
        for identity in freedIdentities where state.rowOfIdentity[identity] == nil {
            guard let entry = state.leftOut.takeFirst(withIdentity: identity, order: order),
                  insertLocked(entry, order: order, tracker: &tracker, &state) else { continue }
            touched.append(.added(entry))
        }
    }

    /// Inserts `new` into the index, or leaves it out when its identity does not decode or
    /// another row holds it. Whether it was inserted.
    private func insertLocked(_ new: IndexEntry, order: RowOrder, tracker: inout MapTracker, _ state: inout State) -> Bool {
        if !state.layout.identityIsRowid {
            guard let identity = canonicalIdentity(state.layout.identity(of: new)) else {
                state.leftOut.insertInvalid(new)
                return false
            }
            if let holder = state.rowOfIdentity[identity], holder != new.rowid {
                state.leftOut.insertDuplicate(new, identity: identity)
                return false
            }
            state.rowOfIdentity[identity] = new.rowid
        }
        state.rows.insert(new, order: order, tracker: &tracker)
        state.adjustSection(state.layout.sectionKey(of: new), by: +1)
        return true
    }

    /// Makes `snapshot` — the state delivered last, when a refetch found nothing new — the newest
    /// state again, so that the next changeset starts from it.
    func keepDelivered(_ snapshot: PublishedResult) {
        state.withLock { $0.latest = snapshot }
    }

    /// Replaces the whole result (a refetch, or a new request) and returns the states before
    /// and after, with the identities left out as duplicates.
    func replaceAll(with builder: IndexBuilder) -> (before: PublishedResult, after: PublishedResult) {
        let built = Self.build(builder)
        return state.withLock { state in
            let before = state.latest ?? publishLocked(&state)
            state.layout = builder.layout
            state.isComplete = true
            (state.rows, state.sectionTree, state.leafOfRow, state.rowOfIdentity) = built
            state.leftOut = builder.leftOut
            state.leftOutSummary = state.leftOut.summary(layout: state.layout, identityType: identityType)
            let after = publishLocked(&state)
            return (before, after)
        }
    }

    /// The row changes that turn the current rows into the rows `builder` gathered, or `nil` when
    /// a refetch is better replaced whole: the layout is positional (its rowids are fetch
    /// ordinals, which every insertion renumbers), rows are left out on either side (which of
    /// two rows holding one identity stays is decided by fetch order), or more than an eighth of
    /// the rows changed. Applied with ``apply(_:)``, a refetch then costs a kept state only the
    /// nodes it changed: every other node is shared with the state before, as on the
    /// incremental path.
    ///
    /// Both sides are in the layout's order, so one merge walk pairs every unchanged row; only
    /// the rows that differ are held.
    ///
    /// - Complexity: O(n) comparisons for n rows; O(k) memory for k changed rows.
    func rowChanges(reaching builder: IndexBuilder) -> [RowChange]? {
        state.withLock { state in
            guard !state.layout.sectionsArePositional, state.leftOut.isEmpty, builder.leftOut.isEmpty else { return nil }
            let before = state.latest ?? publishLocked(&state)
            let limit = max(64, max(before.count, builder.count) / 8)
            let order = RowOrder(ordering: state.layout.ordering)
            var added: [Int64: IndexEntry] = [:]
            var removed: [Int64] = []
            var fresh = builder.entries.makeIterator()
            var next = fresh.next()
            var overLimit = false
            before.rows.forEach(in: 0..<before.count) { old in
                // Fresh rows that sort before this one entered (or moved here).
                while let new = next, order.compare(new, old) < 0 {
                    added[new.rowid] = new
                    next = fresh.next()
                }
                if let new = next, new.rowid == old.rowid, order.compare(new, old) == 0 {
                    if new.key != old.key || new.token != old.token { added[new.rowid] = new }
                    next = fresh.next()
                } else {
                    removed.append(old.rowid)
                }
                overLimit = added.count + removed.count > limit
                return !overLimit
            }
            guard !overLimit else { return nil }
            while let new = next {
                added[new.rowid] = new
                guard added.count + removed.count <= limit else { return nil }
                next = fresh.next()
            }
            var changes = added.values.map { RowChange(rowid: $0.rowid, new: $0) }
            for rowid in removed where added[rowid] == nil { changes.append(RowChange(rowid: rowid, new: nil)) }
            return changes
        }
    }

    /// Up to three identity values, among the rows left out as invalid, that satisfy `predicate`
    /// (the caller's, run under the lock: it only looks at the value).
    package func invalidIdentities(where predicate: (SQLValue) -> Bool) -> [SQLValue] {
        state.withLock { $0.leftOut.invalidIdentities(layout: $0.layout, limit: LeftOutRows.exampleLimit, where: predicate) }
    }

    /// A builder for this index's rows (its identity rules), under `layout`.
    package func makeBuilder(layout: ResultLayout) -> IndexBuilder {
        IndexBuilder(layout: layout, canonicalIdentity: canonicalIdentity)
    }
}
