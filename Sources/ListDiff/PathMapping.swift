/// Follows items through a set of changes read as one transition: where an item of the state
/// before is afterwards, and where an item of the state after was before.
///
/// Deleted items (also those of deleted sections) have no new path; inserted items (also those of
/// inserted sections) have no old path; moved items go where their move says; every other item
/// keeps its relative order and fills the slots that inserts and moves leave free, as UIKit
/// places them (docs/UIKIT-BATCH-RULES.md §1.4). Sections follow the same rule, and a moved section
/// carries its items. A reload does not move an item.
///
/// ```swift
/// import ListDiff
///
/// func insertAtTop() {
///     var changes = ListChanges()
///     changes.itemInserts = [ItemPath(section: 0, item: 0)]
///     let mapping = PathMapping(changes)
///     assert(mapping.newPath(ofOld: ItemPath(section: 0, item: 0)) == ItemPath(section: 0, item: 1))   // pushed down
/// }
/// ```
///
/// Use it on one stage's changes, or on a changeset's logical ``Changeset/changes``: both describe
/// a transition under these rules.
///
/// - Complexity: O(c log c) to build for c changes, O(log c) per question. Never O(n).
public struct PathMapping: Sendable {
    let sections: RankMapping
    /// Per old section: item indices deleted or moved away. Per new section: item indices
    /// inserted or moved in. Sections with no entry have no item change.
    let removedItems: [Int: [Int]]
    let occupiedItems: [Int: [Int]]
    let movedTo: [ItemPath: ItemPath]
    let movedFrom: [ItemPath: ItemPath]
    let deletedItems: Set<ItemPath>
    let insertedItems: Set<ItemPath>

    /// Reads `changes` as one transition.
    public init(_ changes: ListChanges) {
        sections = RankMapping(
            removed: changes.sectionDeletes + changes.sectionMoves.map(\.from),
            occupied: changes.sectionInserts + changes.sectionMoves.map(\.to),
            moves: changes.sectionMoves)
        var removed: [Int: [Int]] = [:], occupied: [Int: [Int]] = [:]
        var to: [ItemPath: ItemPath] = [:], from: [ItemPath: ItemPath] = [:]
        for path in changes.itemDeletes { removed[path.section, default: []].append(path.item) }
        for path in changes.itemInserts { occupied[path.section, default: []].append(path.item) }
        for move in changes.itemMoves {
            removed[move.from.section, default: []].append(move.from.item)
            occupied[move.to.section, default: []].append(move.to.item)
            to[move.from] = move.to
            from[move.to] = move.from
        }
        removedItems = removed.mapValues { $0.sorted() }
        occupiedItems = occupied.mapValues { $0.sorted() }
        movedTo = to
        movedFrom = from
        deletedItems = Set(changes.itemDeletes)
        insertedItems = Set(changes.itemInserts)
    }

    /// The index after the transition of the section at `old` before it; `nil` when deleted.
    public func newSection(ofOld old: Int) -> Int? { sections.newIndex(ofOld: old) }

    /// The index before the transition of the section at `new` after it; `nil` when inserted.
    public func oldSection(ofNew new: Int) -> Int? { sections.oldIndex(ofNew: new) }

    /// Where the item at `old` is after the transition; `nil` when it was deleted.
    public func newPath(ofOld old: ItemPath) -> ItemPath? {
        if let destination = movedTo[old] { return destination }
        if deletedItems.contains(old) { return nil }
        guard let section = sections.newIndex(ofOld: old.section) else { return nil }
        let removed = removedItems[old.section] ?? []
        let rank = old.item - RankMapping.countLess(than: old.item, in: removed)
        return ItemPath(section: section, item: RankMapping.select(rank, notIn: occupiedItems[section] ?? []))
    }

    /// Where the item at `new` was before the transition; `nil` when it was inserted.
    public func oldPath(ofNew new: ItemPath) -> ItemPath? {
        if let source = movedFrom[new] { return source }
        if insertedItems.contains(new) { return nil }
        guard let section = sections.oldIndex(ofNew: new.section) else { return nil }
        let occupied = occupiedItems[new.section] ?? []
        let rank = new.item - RankMapping.countLess(than: new.item, in: occupied)
        return ItemPath(section: section, item: RankMapping.select(rank, notIn: removedItems[section] ?? []))
    }
}

extension ListChanges {
    /// The same transition with every move and reload written as a delete at its old place and an
    /// insert at its new one: the form a view that applies deletes, inserts and moves one set after
    /// another (`NSCollectionView`) reads the same way UIKit does. Cells of moved and reloaded
    /// rows are replaced, so their selection goes with them.
    ///
    /// - Complexity: O(c log c) for c changes.
    public var asDeletesAndInserts: ListChanges {
        guard !itemMoves.isEmpty || !itemReloads.isEmpty || !sectionMoves.isEmpty || !sectionReloads.isEmpty else { return self }
        let mapping = PathMapping(self)
        var result = ListChanges()
        result.sectionDeletes = sectionDeletes + sectionMoves.map(\.from)
        result.sectionInserts = sectionInserts + sectionMoves.map(\.to)
        for section in sectionReloads {
            guard let new = mapping.newSection(ofOld: section) else { continue }
            result.sectionDeletes.append(section)
            result.sectionInserts.append(new)
        }
        let replacedSections = Set(result.sectionDeletes)
        result.itemDeletes = itemDeletes.filter { !replacedSections.contains($0.section) } + itemMoves.map(\.from)
        result.itemInserts = itemInserts + itemMoves.map(\.to)
        for path in itemReloads where !replacedSections.contains(path.section) {
            guard let new = mapping.newPath(ofOld: path) else { continue }
            result.itemDeletes.append(path)
            result.itemInserts.append(new)
        }
        let insertedSections = Set(result.sectionInserts)
        result.itemInserts.removeAll { insertedSections.contains($0.section) }
        result.itemDeletes.removeAll { replacedSections.contains($0.section) }
        return result
    }
}
