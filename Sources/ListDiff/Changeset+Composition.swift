extension Changeset {
    /// One changeset from the state this one starts from to the state `next` leads to, when
    /// `next` starts where this one ends: what a presenter applies when several changesets arrived
    /// while a batch was animating.
    ///
    /// Rows are followed by position through both transitions (``PathMapping``), never by
    /// re-diffing the lists: a row deleted by `self` and inserted again by `next` comes out as a
    /// delete and an insert; a row that changed content in either comes out reloaded.
    ///
    /// Returns `nil` when either changeset lacks its ``before`` or ``after`` state.
    ///
    /// - Complexity: O((c₁ + c₂) log(c₁ + c₂)) for c₁ and c₂ changes; independent of the lists'
    ///   size.
    public func composed(with next: Changeset) -> Changeset? {
        guard let before, let after = next.after else { return nil }
        let composition = _ChangeComposition(first: changes, second: next.changes)
        var duplicates = self.duplicates
        duplicates.sectionIDs.formUnion(next.duplicates.sectionIDs)
        duplicates.itemIDs.formUnion(next.duplicates.itemIDs)
        return Changeset(changes: composition.result, from: before, to: after, duplicates: duplicates)
    }
}

/// Composes two logical transitions A → B and B → C into A → C, by position.
struct _ChangeComposition {
    /// Where an element of the middle state B came from.
    enum Origin<Index> {
        case inserted
        case moved(Index)
        case untouched(Index)
    }

    /// Where an element of the middle state B goes.
    enum Destination<Index> {
        case deleted
        case moved(Index)
        case untouched(Index)
    }

    let result: ListChanges

    init(first: ListChanges, second: ListChanges) {
        let firstMapping = PathMapping(first), secondMapping = PathMapping(second)

        // Sections.
        let sectionMovesTo = Dictionary(first.sectionMoves.map { ($0.to, $0.from) }, uniquingKeysWith: { lhs, _ in lhs })
        let sectionMovesFrom = Dictionary(second.sectionMoves.map { ($0.from, $0.to) }, uniquingKeysWith: { lhs, _ in lhs })
        let firstInsertedSections = Set(first.sectionInserts), secondDeletedSections = Set(second.sectionDeletes)
        func sectionOrigin(_ middle: Int) -> Origin<Int>? {
            if firstInsertedSections.contains(middle) { return .inserted }
            if let from = sectionMovesTo[middle] { return .moved(from) }
            return firstMapping.oldSection(ofNew: middle).map { .untouched($0) }
        }
        func sectionDestination(_ middle: Int) -> Destination<Int>? {
            if secondDeletedSections.contains(middle) { return .deleted }
            if let to = sectionMovesFrom[middle] { return .moved(to) }
            return secondMapping.newSection(ofOld: middle).map { .untouched($0) }
        }
        var reloadedMiddleSections = Set(second.sectionReloads)
        for old in first.sectionReloads {
            if let middle = firstMapping.newSection(ofOld: old) { reloadedMiddleSections.insert(middle) }
        }
        var affectedSections = Set(first.sectionInserts).union(first.sectionMoves.map(\.to)).union(reloadedMiddleSections)
        affectedSections.formUnion(second.sectionDeletes)
        affectedSections.formUnion(second.sectionMoves.map(\.from))
        var deletedSections = Set(first.sectionDeletes), insertedSections = Set(second.sectionInserts)
        var sectionMoves: [Move<Int>] = [], sectionReloads = Set<Int>()
        for middle in affectedSections {
            guard let origin = sectionOrigin(middle), let destination = sectionDestination(middle) else { continue }
            switch (origin, destination) {
            case (.inserted, .deleted): break
            case let (.inserted, .moved(to)), let (.inserted, .untouched(to)): insertedSections.insert(to)
            case let (.moved(from), .deleted), let (.untouched(from), .deleted): deletedSections.insert(from)
            case let (.moved(from), .moved(to)), let (.moved(from), .untouched(to)), let (.untouched(from), .moved(to)):
                sectionMoves.append(Move(from: from, to: to))
                if reloadedMiddleSections.contains(middle) { sectionReloads.insert(from) }
            case let (.untouched(from), .untouched):
                if reloadedMiddleSections.contains(middle) { sectionReloads.insert(from) }
            }
        }

        // Items.
        let itemMovesTo = Dictionary(first.itemMoves.map { ($0.to, $0.from) }, uniquingKeysWith: { lhs, _ in lhs })
        let itemMovesFrom = Dictionary(second.itemMoves.map { ($0.from, $0.to) }, uniquingKeysWith: { lhs, _ in lhs })
        let firstInserted = Set(first.itemInserts), secondDeleted = Set(second.itemDeletes)
        func itemOrigin(_ middle: ItemPath) -> Origin<ItemPath>? {
            if firstInserted.contains(middle) { return .inserted }
            if let from = itemMovesTo[middle] { return .moved(from) }
            return firstMapping.oldPath(ofNew: middle).map { .untouched($0) }
        }
        func itemDestination(_ middle: ItemPath) -> Destination<ItemPath>? {
            if secondDeleted.contains(middle) { return .deleted }
            if let to = itemMovesFrom[middle] { return .moved(to) }
            return secondMapping.newPath(ofOld: middle).map { .untouched($0) }
        }
        var reloadedMiddle = Set(second.itemReloads)
        for old in first.itemReloads {
            if let middle = firstMapping.newPath(ofOld: old) { reloadedMiddle.insert(middle) }
        }
        var affected = firstInserted.union(first.itemMoves.map(\.to)).union(reloadedMiddle)
        affected.formUnion(second.itemDeletes)
        affected.formUnion(second.itemMoves.map(\.from))
        var itemDeletes = Set(first.itemDeletes), itemInserts = Set(second.itemInserts)
        var itemMoves: [Move<ItemPath>] = [], itemReloads = Set<ItemPath>()
        for middle in affected {
            guard let origin = itemOrigin(middle), let destination = itemDestination(middle) else { continue }
            switch (origin, destination) {
            case (.inserted, .deleted): break
            case let (.inserted, .moved(to)), let (.inserted, .untouched(to)): itemInserts.insert(to)
            case let (.moved(from), .deleted), let (.untouched(from), .deleted): itemDeletes.insert(from)
            case let (.moved(from), .moved(to)), let (.moved(from), .untouched(to)), let (.untouched(from), .moved(to)):
                // UIKit cannot move a row out of a deleted or into an inserted section.
                if deletedSections.contains(from.section) || insertedSections.contains(to.section) {
                    itemDeletes.insert(from)
                    itemInserts.insert(to)
                } else {
                    itemMoves.append(Move(from: from, to: to))
                    if reloadedMiddle.contains(middle) { itemReloads.insert(from) }
                }
            case let (.untouched(from), .untouched):
                if reloadedMiddle.contains(middle) && !deletedSections.contains(from.section) { itemReloads.insert(from) }
            }
        }
        sectionReloads.subtract(deletedSections)

        var changes = ListChanges()
        changes.sectionDeletes = deletedSections.sorted()
        changes.sectionInserts = insertedSections.sorted()
        changes.sectionMoves = sectionMoves.sorted { $0.to < $1.to }
        changes.sectionReloads = sectionReloads.sorted()
        changes.itemDeletes = itemDeletes.sorted()
        changes.itemInserts = itemInserts.sorted()
        changes.itemMoves = itemMoves.sorted { $0.to < $1.to }
        changes.itemReloads = itemReloads.sorted()
        result = changes
    }
}
