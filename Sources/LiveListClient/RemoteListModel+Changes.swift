import ListDiff
import LiveListWire

extension RemoteListModel {
    /// Applies a changeset as sent: the sections and counts after it, the window's rows moved with
    /// it, the identities and records it brings. Every index is checked first: a message that
    /// contradicts the list throws and changes nothing.
    mutating func receive(_ message: WireChanges) throws(RemoteListError) -> Output {
        guard message.from == version else { throw .versionGap(expected: version, received: message.from) }
        let changes = message.changes
        let old = state
        let (keys, counts) = try Self.sections(after: changes, keys: message.insertedSectionKeys, old: old)
        try Self.checkItems(changes, old: old, newCounts: counts, message: message)
        let newCount = counts.reduce(0, +)
        if let row = message.rows.first(where: { $0.position >= newCount }) { throw .inconsistent("row at \(row.position) of \(newCount)") }
        let mapping = PathMapping(changes)
        let shell = RemoteListState(keys: keys, counts: counts, known: [:], stateID: old.stateID ?? ListStateID(source: 0, generation: 0))
        var known: [Int: RemoteRow] = [:]
        let reloaded = Set(changes.itemReloads)
        for (position, row) in old.known {
            guard let path = old.path(ofPosition: position), !reloaded.contains(path),
                  let target = mapping.newPath(ofOld: path), let newPosition = shell.position(of: target) else { continue }
            known[newPosition] = row
        }
        func place(_ path: ItemPath, _ id: WireValue, keepVersion: RemoteRow?) {
            guard let position = shell.position(of: path) else { return }
            let version = keepVersion.flatMap { $0.id == .row(id) ? $0.version : nil } ?? freshVersion()
            known[position] = RemoteRow(id: .row(id), version: version)
        }
        for (path, id) in zip(changes.itemInserts, message.insertedIDs) { place(path, id, keepVersion: nil) }
        for (move, id) in zip(changes.itemMoves, message.movedIDs) where !reloaded.contains(move.from) {
            place(move.to, id, keepVersion: old.position(of: move.from).flatMap { old.known[$0] })
        }
        for (path, id) in zip(changes.itemReloads, message.reloadedIDs) {
            if let target = mapping.newPath(ofOld: path) { place(target, id, keepVersion: nil) }
        }
        var loaded: [RemoteRowID] = []
        for row in message.rows {
            let existing = known[row.position]
            let kept = existing.flatMap { $0.id == .row(row.id) ? $0.version : nil }
            let version = kept ?? freshVersion()
            known[row.position] = RemoteRow(id: .row(row.id), version: version)
            if let values = row.values {
                if kept != nil, records[row.id]?.version != version { loaded.append(.row(row.id)) }
                records[row.id] = (version, values)
            }
        }
        version = message.to
        lastObservedAt = message.observedAt ?? lastObservedAt
        if let restated = message.restated {
            // The answer to new arguments: the new list's order and effects replace the old ones.
            order = restated.order
            effects = restated.effects
        }
        let kept = pruned(known, count: shell.count)
        state = RemoteListState(keys: keys, counts: counts, known: kept, stateID: nextStateID())
        // A row that stayed but whose identity the client learns only now (it slid into the window)
        // changes what its cell shows: the presenter reloads it with the rest.
        var presented = changes
        var reloads = Set(changes.itemReloads)
        for row in message.rows {
            guard let target = state.path(ofPosition: row.position), let source = mapping.oldPath(ofNew: target),
                  old.item(at: source).id != state.item(at: target).id, reloads.insert(source).inserted else { continue }
            presented.itemReloads.append(source)
        }
        return .changes(Changeset(changes: presented, from: old, to: state), loaded: loaded)
    }

    /// The sections' keys and counts after `changes`, every section index checked.
    static func sections(after changes: ListChanges, keys insertedKeys: [WireValue],
                         old: RemoteListState) throws(RemoteListError) -> (keys: [WireValue], counts: [Int]) {
        let oldCount = old.sectionCount
        let deleted = Set(changes.sectionDeletes)
        guard deleted.count == changes.sectionDeletes.count, deleted.allSatisfy({ (0..<oldCount).contains($0) }) else {
            throw .inconsistent("section deletes \(changes.sectionDeletes) of \(oldCount) sections")
        }
        let newCount = oldCount - deleted.count + changes.sectionInserts.count
        let inserted = Set(changes.sectionInserts)
        guard insertedKeys.count == changes.sectionInserts.count, inserted.count == changes.sectionInserts.count,
              inserted.allSatisfy({ (0..<newCount).contains($0) }) else {
            throw .inconsistent("section inserts \(changes.sectionInserts) of \(newCount) sections")
        }
        for move in changes.sectionMoves {
            guard (0..<oldCount).contains(move.from), !deleted.contains(move.from), (0..<newCount).contains(move.to), !inserted.contains(move.to) else {
                throw .inconsistent("section move \(move.from) → \(move.to)")
            }
        }
        for section in changes.sectionReloads where !(0..<oldCount).contains(section) {
            throw .inconsistent("section reload \(section) of \(oldCount)")
        }
        let mapping = PathMapping(changes)
        var keys = [WireValue?](repeating: nil, count: newCount)
        var counts = [Int](repeating: 0, count: newCount)
        for section in 0..<oldCount where !deleted.contains(section) {
            guard let target = mapping.newSection(ofOld: section), (0..<newCount).contains(target), keys[target] == nil else {
                throw .inconsistent("section \(section) has no place after the changes")
            }
            keys[target] = old.keys[section]
            counts[target] = old.counts[section]
        }
        for (index, key) in zip(changes.sectionInserts, insertedKeys) { keys[index] = key }
        // A path's section is checked before it is mapped: the mapping answers for sections of the
        // list (a hostile server's delete in section 5 of 1 would count in a section that is not).
        for path in changes.itemDeletes {
            guard (0..<oldCount).contains(path.section) else { throw .inconsistent("item delete \(path) of \(oldCount) sections") }
            if !deleted.contains(path.section), let target = mapping.newSection(ofOld: path.section) { counts[target] -= 1 }
        }
        for move in changes.itemMoves {
            if (0..<oldCount).contains(move.from.section), !deleted.contains(move.from.section),
               let source = mapping.newSection(ofOld: move.from.section), (0..<newCount).contains(move.to.section) {
                counts[source] -= 1
                counts[move.to.section] += 1
            } else {
                throw .inconsistent("item move \(move.from) → \(move.to)")
            }
        }
        for path in changes.itemInserts {
            guard (0..<newCount).contains(path.section) else { throw .inconsistent("item insert \(path)") }
            counts[path.section] += 1
        }
        guard counts.allSatisfy({ $0 >= 0 }) else { throw .inconsistent("a section count below zero") }
        return (keys.map { $0 ?? .null }, counts)
    }

    /// Checks every item path against the counts before and after, and the identities' lists.
    static func checkItems(_ changes: ListChanges, old: RemoteListState, newCounts: [Int],
                           message: WireChanges) throws(RemoteListError) {
        func inOld(_ path: ItemPath) -> Bool { path.section >= 0 && path.section < old.sectionCount && path.item >= 0 && path.item < old.counts[path.section] }
        func inNew(_ path: ItemPath) -> Bool { path.section >= 0 && path.section < newCounts.count && path.item >= 0 && path.item < newCounts[path.section] }
        let sources = changes.itemDeletes + changes.itemMoves.map(\.from)
        guard sources.allSatisfy(inOld), Set(sources).count == sources.count, changes.itemReloads.allSatisfy(inOld),
              Set(changes.itemReloads).isDisjoint(with: changes.itemDeletes) else {
            throw .inconsistent("an item delete, move or reload outside the list before")
        }
        let targets = changes.itemInserts + changes.itemMoves.map(\.to)
        guard targets.allSatisfy(inNew), Set(targets).count == targets.count else {
            throw .inconsistent("an item insert or move outside the list after")
        }
        guard message.insertedIDs.count == changes.itemInserts.count, message.movedIDs.count == changes.itemMoves.count,
              message.reloadedIDs.count == changes.itemReloads.count else {
            throw .inconsistent("identities do not match the changes")
        }
    }
}
