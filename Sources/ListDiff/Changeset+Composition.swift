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
        let composition = ChangeComposition(first: changes, second: next.changes)
        var duplicates = self.duplicates
        duplicates.sectionIDs.formUnion(next.duplicates.sectionIDs)
        duplicates.itemIDs.formUnion(next.duplicates.itemIDs)
        return Changeset(changes: composition.result, from: before, to: after, duplicates: duplicates)
    }
}

extension ListChanges {
    /// The changes from A to C, for `self` from A to B and `next` from B to C, by position: what
    /// ``Changeset/composed(with:)`` does, for a holder that keeps the changes without the
    /// states (a server's resume buffer).
    ///
    /// - Complexity: O(c log c) for c changes in both.
    package func composed(with next: ListChanges) -> ListChanges {
        ChangeComposition(first: self, second: next).result
    }
}

/// Composes two logical transitions A → B and B → C into A → C, by position.
struct ChangeComposition {
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

    /// One kind of element's changes in a transition: sections, or items.
    struct Changes<Index: Hashable & Comparable & Sendable> {
        var deletes: Set<Index>
        var inserts: Set<Index>
        var moves: [Move<Index>]
        var reloads: Set<Index>
    }

    /// How one transition moves one kind of element (see ``PathMapping``).
    struct Mapping<Index> {
        var newIndex: (_ old: Index) -> Index?
        var oldIndex: (_ new: Index) -> Index?
    }

    let result: ListChanges

    init(first: ListChanges, second: ListChanges) {
        let firstMapping = PathMapping(first), secondMapping = PathMapping(second)
        let sections = Self.compose(
            Changes(deletes: Set(first.sectionDeletes), inserts: Set(first.sectionInserts), moves: first.sectionMoves, reloads: Set(first.sectionReloads)),
            Changes(deletes: Set(second.sectionDeletes), inserts: Set(second.sectionInserts), moves: second.sectionMoves, reloads: Set(second.sectionReloads)),
            Mapping(newIndex: firstMapping.newSection(ofOld:), oldIndex: firstMapping.oldSection(ofNew:)),
            Mapping(newIndex: secondMapping.newSection(ofOld:), oldIndex: secondMapping.oldSection(ofNew:)))
        let items = Self.compose(
            Changes(deletes: Set(first.itemDeletes), inserts: Set(first.itemInserts), moves: first.itemMoves, reloads: Set(first.itemReloads)),
            Changes(deletes: Set(second.itemDeletes), inserts: Set(second.itemInserts), moves: second.itemMoves, reloads: Set(second.itemReloads)),
            Mapping(newIndex: firstMapping.newPath(ofOld:), oldIndex: firstMapping.oldPath(ofNew:)),
            Mapping(newIndex: secondMapping.newPath(ofOld:), oldIndex: secondMapping.oldPath(ofNew:)),
            // UIKit cannot move a row out of a deleted or into an inserted section.
            splitsMove: { from, to in sections.deletes.contains(from.section) || sections.inserts.contains(to.section) },
            keepsReload: { from in !sections.deletes.contains(from.section) })

        var changes = ListChanges()
        changes.sectionDeletes = sections.deletes.sorted()
        changes.sectionInserts = sections.inserts.sorted()
        changes.sectionMoves = sections.moves.sorted { $0.to < $1.to }
        changes.sectionReloads = sections.reloads.subtracting(sections.deletes).sorted()
        changes.itemDeletes = items.deletes.sorted()
        changes.itemInserts = items.inserts.sorted()
        changes.itemMoves = items.moves.sorted { $0.to < $1.to }
        changes.itemReloads = items.reloads.sorted()
        result = changes
    }

    /// Follows every element the two transitions touch from where it was in A to where it is in
    /// C. `splitsMove` says when a move must become a delete and an insert; `keepsReload` whether
    /// a reload of an element that did not move stays.
    static func compose<Index: Hashable & Comparable & Sendable>(_ first: Changes<Index>, _ second: Changes<Index>,
                               _ firstMapping: Mapping<Index>, _ secondMapping: Mapping<Index>,
                               splitsMove: (_ from: Index, _ to: Index) -> Bool = { _, _ in false },
                               keepsReload: (_ from: Index) -> Bool = { _ in true }) -> Changes<Index> {
        let movedTo = Dictionary(first.moves.map { ($0.to, $0.from) }, uniquingKeysWith: { lhs, _ in lhs })
        let movedFrom = Dictionary(second.moves.map { ($0.from, $0.to) }, uniquingKeysWith: { lhs, _ in lhs })
        func origin(_ middle: Index) -> Origin<Index>? {
            if first.inserts.contains(middle) { return .inserted }
            if let from = movedTo[middle] { return .moved(from) }
            return firstMapping.oldIndex(middle).map { .untouched($0) }
        }
        func destination(_ middle: Index) -> Destination<Index>? {
            if second.deletes.contains(middle) { return .deleted }
            if let to = movedFrom[middle] { return .moved(to) }
            return secondMapping.newIndex(middle).map { .untouched($0) }
        }
        var reloadedMiddle = second.reloads
        for old in first.reloads {
            if let middle = firstMapping.newIndex(old) { reloadedMiddle.insert(middle) }
        }
        var affected = first.inserts.union(first.moves.map(\.to)).union(reloadedMiddle)
        affected.formUnion(second.deletes)
        affected.formUnion(second.moves.map(\.from))
        var result = Changes<Index>(deletes: first.deletes, inserts: second.inserts, moves: [], reloads: [])
        for middle in affected {
            guard let origin = origin(middle), let destination = destination(middle) else { continue }
            switch (origin, destination) {
            case (.inserted, .deleted): break
            case let (.inserted, .moved(to)), let (.inserted, .untouched(to)): result.inserts.insert(to)
            case let (.moved(from), .deleted), let (.untouched(from), .deleted): result.deletes.insert(from)
            case let (.moved(from), .moved(to)), let (.moved(from), .untouched(to)), let (.untouched(from), .moved(to)):
                if splitsMove(from, to) {
                    result.deletes.insert(from)
                    result.inserts.insert(to)
                } else {
                    result.moves.append(Move(from: from, to: to))
                    if reloadedMiddle.contains(middle) { result.reloads.insert(from) }
                }
            case let (.untouched(from), .untouched):
                if reloadedMiddle.contains(middle) && keepsReload(from) { result.reloads.insert(from) }
            }
        }
        return result
    }
}
