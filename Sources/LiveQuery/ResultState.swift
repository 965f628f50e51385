import ListDiff

/// The live, mutable side of a query's result: the order index, where each row sits, and how many
/// rows each section holds. Confined to the database writer's queue.
struct ResultState {
    /// A row's state before and after a transaction (`nil`: not in the result).
    struct RowChange {
        var rowid: Int64
        var old: IndexEntry?
        var new: IndexEntry?
    }

    private(set) var index: OrderIndex
    /// rowid → sort key, to find a row's entry when it changes.
    private(set) var keys: [Int64: SortKey] = [:]
    private(set) var sections: [LiveResult.Section]
    let isSectioned: Bool
    let sectionRule: SortKeyComparator.Rule?

    init(comparator: SortKeyComparator, sorted entries: [IndexEntry], isSectioned: Bool) {
        index = OrderIndex(comparator: comparator, sorted: entries)
        self.isSectioned = isSectioned
        sectionRule = isSectioned ? comparator.rules.first : nil
        keys.reserveCapacity(entries.count)
        for entry in entries { keys[entry.rowid] = entry.key }
        sections = isSectioned ? [] : [LiveResult.Section(key: .null, count: entries.count)]
        if isSectioned {
            for entry in entries {
                let key = sectionKey(of: entry)
                if sections.last?.key == key { sections[sections.count - 1].count += 1 } else {
                    sections.append(LiveResult.Section(key: key, count: 1))
                }
            }
        }
    }

    var result: LiveResult { LiveResult(index: index, sections: sections) }

    func entry(for rowid: Int64) -> IndexEntry? {
        guard let key = keys[rowid] else { return nil }
        return index.stored(matching: IndexEntry(key: key, rowid: rowid, version: .null))
    }

    func sectionKey(of entry: IndexEntry) -> SQLValue {
        guard let rule = sectionRule else { return .null }
        return SortKeyComparator.sectionKey(entry.key.first, rule.collation)
    }

    /// The index of the section `key` in `sections`, or where it would be inserted.
    private func sectionSlot(_ key: SQLValue, in sections: [LiveResult.Section]) -> (index: Int, found: Bool) {
        guard let rule = sectionRule else { return (0, !sections.isEmpty) }
        var low = 0, high = sections.count
        while low < high {
            let middle = (low + high) >> 1
            if SortKeyComparator.compare(sections[middle].key, key, rule) < 0 { low = middle + 1 } else { high = middle }
        }
        return (low, low < sections.count && sections[low].key == key)
    }

    private static func path(ofPosition position: Int, sectionIndex: Int, in sections: [LiveResult.Section]) -> ItemPath {
        var start = 0
        for section in sections[0..<sectionIndex] { start += section.count }
        return ItemPath(section: sectionIndex, item: position - start)
    }

    /// Applies the row changes of one transaction and returns the changeset from the result
    /// before to the result after, staged for UIKit, with snapshots built only if read.
    mutating func apply(_ changes: [RowChange]) -> LiveChangeset {
        let before = result
        let oldSections = sections
        var removed: [(change: RowChange, path: ItemPath)] = []
        var moved: [(change: RowChange, path: ItemPath)] = []
        var reloadedInPlace: [(change: RowChange, path: ItemPath)] = []
        var added: [RowChange] = []

        // Old paths, read before anything moves.
        for change in changes {
            switch (change.old, change.new) {
            case let (old?, new?):
                guard let position = index.position(of: old) else { continue }
                let sectionIndex = sectionSlot(sectionKey(of: old), in: oldSections).index
                let path = Self.path(ofPosition: position, sectionIndex: sectionIndex, in: oldSections)
                if index.comparator.compareKeys(old.key, new.key) != 0 || sectionKey(of: old) != sectionKey(of: new) {
                    moved.append((change, path))
                } else if old.version != new.version || old.key != new.key {
                    // Same place; new content, or new values that compare equal ('a' → 'A').
                    reloadedInPlace.append((change, path))
                }
            case let (old?, nil):
                guard let position = index.position(of: old) else { continue }
                let sectionIndex = sectionSlot(sectionKey(of: old), in: oldSections).index
                removed.append((change, Self.path(ofPosition: position, sectionIndex: sectionIndex, in: oldSections)))
            case (nil, _?):
                added.append(change)
            case (nil, nil):
                continue
            }
        }

        // Mutate the index, the key map and the section counts.
        for (change, _) in removed + moved {
            guard let old = change.old else { continue }
            index.remove(old)
            keys[change.rowid] = nil
            adjustSection(sectionKey(of: old), by: -1)
        }
        for (change, _) in reloadedInPlace {
            guard let old = change.old, let new = change.new else { continue }
            index.replace(old, with: new)
            keys[change.rowid] = new.key
        }
        for change in added + moved.map(\.change) {
            guard let new = change.new else { continue }
            index.insert(new)
            keys[change.rowid] = new.key
            adjustSection(sectionKey(of: new), by: +1)
        }
        let newSections = sections

        // Section changes: sections keep their relative order, so they never move.
        var logical = ListChanges()
        let oldKeys = Set(oldSections.map(\.key)), newKeys = Set(newSections.map(\.key))
        for (offset, section) in oldSections.enumerated() where !newKeys.contains(section.key) { logical.sectionDeletes.append(offset) }
        for (offset, section) in newSections.enumerated() where !oldKeys.contains(section.key) { logical.sectionInserts.append(offset) }
        let deletedSections = Set(logical.sectionDeletes), insertedSections = Set(logical.sectionInserts)

        func newPath(of entry: IndexEntry) -> ItemPath? {
            guard let position = index.position(of: entry) else { return nil }
            return Self.path(ofPosition: position, sectionIndex: sectionSlot(sectionKey(of: entry), in: newSections).index, in: newSections)
        }

        var stageA = ListChanges(), stageB = ListChanges(), stageC = ListChanges(), stageD = ListChanges()
        stageB.sectionDeletes = logical.sectionDeletes
        stageC.sectionInserts = logical.sectionInserts
        var newVersions: [Int64: SQLValue] = [:]
        for (_, path) in removed {
            logical.itemDeletes.append(path)
            if !deletedSections.contains(path.section) { stageB.itemDeletes.append(path) }
        }
        for (change, path) in reloadedInPlace {
            logical.itemReloads.append(path)
            stageA.itemReloads.append(path)
            if let new = change.new { newVersions[change.rowid] = new.version }
        }
        var carriedMoves: [(from: ItemPath, to: ItemPath)] = []
        for (change, oldPath) in moved {
            guard let new = change.new, let toPath = newPath(of: new) else { continue }
            let carried = !deletedSections.contains(oldPath.section) && !insertedSections.contains(toPath.section)
            if carried {
                logical.itemMoves.append(Move(from: oldPath, to: toPath))
                carriedMoves.append((oldPath, toPath))
                if change.old?.version != new.version {
                    logical.itemReloads.append(oldPath)
                    stageA.itemReloads.append(oldPath)
                    newVersions[change.rowid] = new.version
                }
            } else {
                logical.itemDeletes.append(oldPath)
                logical.itemInserts.append(toPath)
                if !deletedSections.contains(oldPath.section) { stageB.itemDeletes.append(oldPath) }
                if !insertedSections.contains(toPath.section) { stageD.itemInserts.append(toPath) }
            }
        }
        for change in added {
            guard let new = change.new, let path = newPath(of: new) else { continue }
            logical.itemInserts.append(path)
            if !insertedSections.contains(path.section) { stageD.itemInserts.append(path) }
        }

        // Stage (d) moves start from the state after (b) and (c): the row's section at its new
        // index, the row's index less the deletes before it in that section.
        let deletesBySection = Dictionary(grouping: stageB.itemDeletes, by: \.section).mapValues { $0.map(\.item).sorted() }
        let oldToNewSection = Self.sectionMapping(from: oldSections, to: newSections)
        for move in carriedMoves {
            let deletedBefore = deletesBySection[move.from.section].map { Self.countLess(than: move.from.item, in: $0) } ?? 0
            let from = ItemPath(section: oldToNewSection[move.from.section] ?? move.from.section, item: move.from.item - deletedBefore)
            stageD.itemMoves.append(Move(from: from, to: move.to))
        }

        // Temporary: staged by the one stager over materialized snapshots until the index serves views.
        _ = (stageA, stageC, newVersions)
        return LiveChangeset(changes: logical, from: before.snapshot(), to: result.snapshot())
    }

    private mutating func adjustSection(_ key: SQLValue, by delta: Int) {
        guard isSectioned else {
            sections[0].count += delta
            return
        }
        let (slot, found) = sectionSlot(key, in: sections)
        if found {
            sections[slot].count += delta
            if sections[slot].count == 0 { sections.remove(at: slot) }
        } else if delta > 0 {
            sections.insert(LiveResult.Section(key: key, count: delta), at: slot)
        }
    }

    private static func sectionMapping(from old: [LiveResult.Section], to new: [LiveResult.Section]) -> [Int: Int] {
        var newIndex: [SQLValue: Int] = [:]
        for (offset, section) in new.enumerated() { newIndex[section.key] = offset }
        var mapping: [Int: Int] = [:]
        for (offset, section) in old.enumerated() { if let target = newIndex[section.key] { mapping[offset] = target } }
        return mapping
    }

    private static func countLess(than value: Int, in sorted: [Int]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) >> 1
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// Builds the intermediate snapshots of an incrementally produced changeset, on demand: the old
/// result with new versions (after reloads), without the deleted rows and sections (after
/// deletes), with the inserted sections (after section inserts).
struct IntermediateSnapshots: Sendable {
    let before: LiveResult
    let after: LiveResult
    let newVersions: [Int64: SQLValue]
    let stageBDeletes: [ItemPath]
    let deletedSections: [Int]
    let insertedSections: [Int]

    func snapshot(afterStage stage: Int) -> LiveSnapshot {
        var sections = before.snapshot().sections
        for sectionIndex in sections.indices {
            for itemIndex in sections[sectionIndex].items.indices {
                if let version = newVersions[sections[sectionIndex].items[itemIndex].id] {
                    sections[sectionIndex].items[itemIndex].version = version
                }
            }
        }
        if stage == 0 { return LiveSnapshot(sections: sections) }
        let deleted = Set(stageBDeletes)
        let removedSections = Set(deletedSections)
        var survivors: [SnapshotSection<LiveSection, LiveRow>] = []
        for (sectionIndex, section) in sections.enumerated() where !removedSections.contains(sectionIndex) {
            var kept = section
            kept.items = section.items.enumerated().filter { !deleted.contains(ItemPath(section: sectionIndex, item: $0.offset)) }.map(\.element)
            survivors.append(kept)
        }
        if stage == 1 { return LiveSnapshot(sections: survivors) }
        let final = after.snapshot().sections
        for index in insertedSections.sorted() where index <= survivors.count {
            survivors.insert(final[index], at: index)
        }
        return LiveSnapshot(sections: survivors)
    }
}
