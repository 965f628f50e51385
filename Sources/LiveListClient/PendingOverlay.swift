import ListDiff
import LiveListWire

/// The app's pending changes over a remote list, and what the list shows with them: the
/// server's state at its version with the pending changes laid over the rows the client holds.
/// Decisions only, no I/O: ``resolve(over:stateID:)`` lays the changes over a server state,
/// ``transition(from:through:to:)`` gives the one changeset from what was shown to what is
/// shown now.
///
/// The overlay never touches a row the client does not hold, so its changes stay within the
/// window: the rows before it keep their positions, the rows after it shift by the same count.
struct PendingOverlay {
    /// Pending changes shown together (one mutation's), in the order they were shown.
    struct Entry {
        let id: PendingChangesID
        let changes: [PendingChange]
        /// Shown only when every change shows as stated (an insert placed, an update at its
        /// sorted place): a derived effect, which must equal what the commit will show or show
        /// nothing.
        var exact = false
    }

    /// One server state with the changes laid over it.
    struct Resolved {
        /// The server's state.
        var server: RemoteListState
        /// What the list shows: `server` itself when no change shows.
        var displayed: RemoteListState
        /// From `server` to `displayed`: rows taken out deleted, rows added or moved inserted,
        /// rows changed in place reloaded.
        var changes: ListChanges
        /// The values shown for the pending rows, by identity, at their displayed version.
        var records: [WireValue: (version: UInt64, values: [WireValue])]
        /// The positions of the server's held rows (its window) and how many rows the displayed
        /// list has in their place.
        var region: Range<Int>
        var displayedRegionCount: Int

        /// The server's state shown as it is.
        static func plain(_ server: RemoteListState) -> Resolved {
            Resolved(server: server, displayed: server, changes: ListChanges(), records: [:], region: 0..<0, displayedRegionCount: 0)
        }

        /// Whether the displayed list is the server's.
        var isPlain: Bool { changes.isEmpty }

        /// The server's position of displayed position `position` (the nearest held one, for a
        /// pending row).
        func serverPosition(ofDisplayed position: Int) -> Int {
            if position < region.lowerBound { return position }
            let offset = position - region.lowerBound
            if offset >= displayedRegionCount { return position - displayedRegionCount + region.count }
            return region.lowerBound + min(offset, max(0, region.count - 1))
        }
    }

    private(set) var entries: [Entry] = []
    private var lastID = 0
    /// Versions of pending rows: the top bit set (``RemoteRow/isPending`` reads it), apart from
    /// the server's rows' versions.
    private var lastVersion: UInt64 = RemoteRow.pendingVersions
    /// The last resolution's pending rows, so that a row whose values did not change keeps its
    /// version (its cell is not reloaded).
    private var lastRecords: [WireValue: (version: UInt64, values: [WireValue])] = [:]

    var isEmpty: Bool { entries.isEmpty }

    /// Lays `changes` over the list, after those shown before.
    mutating func add(_ changes: [PendingChange], exact: Bool = false) -> PendingChangesID {
        lastID += 1
        let id = PendingChangesID(value: lastID)
        entries.append(Entry(id: id, changes: changes, exact: exact))
        return id
    }

    /// Takes the changes named `id` away; `false` when they were not shown.
    @discardableResult
    mutating func remove(_ id: PendingChangesID) -> Bool {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// The list `model` holds with every pending change laid over the rows it holds, in the order
    /// they were shown; `stateID` names the displayed state when it is not the server's.
    ///
    /// - Complexity: O(w + k + p·w) for w rows held in the window, k rows known, and p changes.
    mutating func resolve(over model: RemoteListModel, stateID: () -> ListStateID) -> Resolved {
        let server = model.state
        guard !entries.isEmpty else {
            lastRecords = [:]
            return .plain(server)
        }
        let region = model.window.clamped(to: 0..<server.count)
        var slots: [OverlaySlot] = []
        slots.reserveCapacity(region.count + entries.count)
        var section = 0
        for position in region {
            while section + 1 < server.sectionCount, server.starts[section + 1] <= position { section += 1 }
            let row = server.row(at: position)
            var id: WireValue?
            if case let .row(value) = row.id { id = value }
            slots.append(OverlaySlot(id: id, values: model.record(for: row)?.values, section: section, serverPosition: position, isPending: false))
        }
        var held = Set<WireValue>()
        for row in server.known.values { if case let .row(id) = row.id { held.insert(id) } }
        let placer = Placer(server: server, region: region, order: model.order)
        let columnIndex = Dictionary(model.columns.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        for entry in entries {
            var laid = slots
            var asStated = true
            for change in entry.changes {
                asStated = Self.apply(change, to: &laid, held: held, columns: model.columns, columnIndex: columnIndex, placer: placer) && asStated
            }
            if asStated || !entry.exact { slots = laid }
        }
        return finish(slots, server: server, region: region, stateID: stateID)
    }

    /// Lays `change` over `slots`; `false` when it could not show as stated (an insert whose
    /// place is not known, an update that stays where it is for want of its sorted place, a row
    /// held without values, or held outside the window).
    @discardableResult
    private static func apply(_ change: PendingChange, to slots: inout [OverlaySlot], held: Set<WireValue>, columns: [String],
                              columnIndex: [String: Int], placer: Placer) -> Bool {
        switch change {
        case let .insert(id, values, placement):
            guard !held.contains(id), !slots.contains(where: { $0.id == id }) else { return true }
            let row = columns.map { values[$0] ?? .null }
            guard let (index, section) = placer.place(id, row, placement, among: slots) else { return false }
            slots.insert(OverlaySlot(id: id, values: row, section: section, serverPosition: nil, isPending: true), at: index)
            return true
        case let .update(id, values):
            // A row held outside the window (a window asked for) changes where it cannot be shown.
            guard let index = slots.firstIndex(where: { $0.id == id }) else { return !held.contains(id) }
            guard let held = slots[index].values else { return false }
            // A row held with fewer values than columns (a broken server, a damaged offline file)
            // reads the missing ones as NULL, as its order does: an update may name any column.
            let old = held + Array(repeating: .null, count: max(0, columns.count - held.count))
            var row = old
            for (name, value) in values { if let column = columnIndex[name] { row[column] = value } }
            guard row != old else { return true }
            var slot = slots.remove(at: index)
            let place = placer.place(id, row, .sorted, among: slots)
            if let (target, section) = place, target != index || section != slot.section {
                slots.insert(OverlaySlot(id: id, values: row, section: section, serverPosition: nil, isPending: true), at: target)
            } else {
                slot.values = row
                slot.isPending = true
                slots.insert(slot, at: index)
            }
            return place != nil
        case let .delete(id):
            guard let index = slots.firstIndex(where: { $0.id == id }) else { return !held.contains(id) }
            slots.remove(at: index)
            return true
        }
    }

    /// The displayed state and the changes to it from the laid-over region.
    private mutating func finish(_ slots: [OverlaySlot], server: RemoteListState, region: Range<Int>, stateID: () -> ListStateID) -> Resolved {
        var present = Set<Int>()
        for slot in slots { if let position = slot.serverPosition { present.insert(position) } }
        var changes = ListChanges()
        var counts = server.counts
        for position in region where !present.contains(position) {
            guard let path = server.path(ofPosition: position) else { continue }
            changes.itemDeletes.append(path)
            counts[path.section] -= 1
        }
        for slot in slots where slot.serverPosition == nil { counts[slot.section] += 1 }
        for slot in slots where slot.isPending {
            if let position = slot.serverPosition, let path = server.path(ofPosition: position) { changes.itemReloads.append(path) }
        }
        guard !changes.itemDeletes.isEmpty || !changes.itemReloads.isEmpty || slots.contains(where: { $0.serverPosition == nil }) else {
            lastRecords = [:]
            return .plain(server)
        }
        let shift = slots.count - region.count
        var known: [Int: RemoteRow] = [:]
        for (position, row) in server.known {
            if position < region.lowerBound { known[position] = row } else if position >= region.upperBound { known[position + shift] = row }
        }
        var records: [WireValue: (version: UInt64, values: [WireValue])] = [:]
        for (offset, slot) in slots.enumerated() {
            let position = region.lowerBound + offset
            if slot.isPending, let id = slot.id, let values = slot.values {
                let version: UInt64
                if let last = lastRecords[id], last.values == values {
                    version = last.version
                } else {
                    lastVersion += 1
                    version = lastVersion
                }
                known[position] = RemoteRow(id: .row(id), version: version)
                records[id] = (version, values)
            } else if let serverPosition = slot.serverPosition, let row = server.known[serverPosition] {
                known[position] = row
            }
        }
        lastRecords = records
        // A section whose every row a pending change took away is gone, as the server will send it.
        var keys = server.keys
        if keys != [.null] {
            changes.sectionDeletes = counts.indices.filter { counts[$0] == 0 && server.counts[$0] > 0 }
            for section in changes.sectionDeletes.reversed() {
                keys.remove(at: section)
                counts.remove(at: section)
            }
        }
        let displayed = RemoteListState(keys: keys, counts: counts, known: known, stateID: stateID())
        for (offset, slot) in slots.enumerated() where slot.serverPosition == nil {
            if let path = displayed.path(ofPosition: region.lowerBound + offset) { changes.itemInserts.append(path) }
        }
        return Resolved(server: server, displayed: displayed, changes: changes, records: records, region: region,
                        displayedRegionCount: slots.count)
    }

    /// The one changeset from what `old` showed to what `new` shows, the server's state having
    /// gone through `server` (`nil`: it did not change): the pending changes taken back, the
    /// server's changes, the pending changes laid again — with a row that leaves one place and
    /// comes back at another as the same identity moved (and reloaded when its content changed),
    /// never deleted and inserted.
    ///
    /// - Complexity: O(c log c) for c changes in all.
    static func transition(from old: Resolved, through server: ListChanges?, to new: Resolved) -> ListChanges {
        if old.isPlain && new.isPlain { return server ?? ListChanges() }
        var back = ListChanges()
        back.itemDeletes = old.changes.itemInserts
        back.itemInserts = old.changes.itemDeletes
        back.sectionInserts = old.changes.sectionDeletes
        let mapping = PathMapping(old.changes)
        back.itemReloads = old.changes.itemReloads.compactMap { mapping.newPath(ofOld: $0) }
        var changes = back
        if let server { changes = changes.composed(with: server) }
        changes = changes.composed(with: new.changes)
        return paired(changes, before: old.displayed, after: new.displayed)
    }

    /// `changes` with every row deleted and inserted again under the same identity written as a
    /// move, reloaded when its version changed.
    private static func paired(_ changes: ListChanges, before: RemoteListState, after: RemoteListState) -> ListChanges {
        let deletedSections = Set(changes.sectionDeletes), insertedSections = Set(changes.sectionInserts)
        var deleted: [WireValue: ItemPath] = [:]
        for path in changes.itemDeletes where !deletedSections.contains(path.section) {
            if case let .row(id) = before.item(at: path).id { deleted[id] = path }
        }
        var result = changes
        var movedFrom = Set<ItemPath>(), movedTo = Set<ItemPath>()
        for path in changes.itemInserts where !insertedSections.contains(path.section) {
            guard case let .row(id) = after.item(at: path).id, let from = deleted.removeValue(forKey: id) else { continue }
            movedFrom.insert(from)
            movedTo.insert(path)
            result.itemMoves.append(Move(from: from, to: path))
            if before.item(at: from).version != after.item(at: path).version { result.itemReloads.append(from) }
        }
        result.itemDeletes.removeAll { movedFrom.contains($0) }
        result.itemInserts.removeAll { movedTo.contains($0) }
        result.itemMoves.sort { $0.to < $1.to }
        dropStandingMoves(&result)
        // A reload of a row that shows the same identity and version after (a pending row taken
        // back and laid again as it was) would replace its cell for nothing.
        if !result.itemReloads.isEmpty {
            let mapping = PathMapping(result)
            result.itemReloads = result.itemReloads.filter { path in
                guard let target = mapping.newPath(ofOld: path) else { return true }
                return before.item(at: path) != after.item(at: target)
            }.sorted()
        }
        return result
    }
}

extension PendingOverlay {
    /// Drops each move whose row ends where the other changes carry it anyway (a pending row
    /// replaced in place by the server's, taken back and laid again): the row stays, reloaded
    /// when its version changed, and no cell travels for nothing.
    /// - Complexity: O(m · c log c) for m moves among c changes.
    static func dropStandingMoves(_ changes: inout ListChanges) {
        var index = 0
        while index < changes.itemMoves.count {
            let move = changes.itemMoves[index]
            var trial = changes
            trial.itemMoves.remove(at: index)
            if PathMapping(trial).newPath(ofOld: move.from) == move.to {
                changes = trial
            } else {
                index += 1
            }
        }
    }
}

/// A row of the held region as the pending changes are laid over it.
private struct OverlaySlot {
    var id: WireValue?
    var values: [WireValue]?
    var section: Int
    /// The server's position of the row; `nil` for a row the changes put here.
    var serverPosition: Int?
    var isPending: Bool
}

/// Finds where a pending row stands among the rows held, exactly or not at all.
private struct Placer {
    let server: RemoteListState
    let region: Range<Int>
    let order: WireOrder?

    /// Whether the list has sections (one section keyed NULL is a list without).
    var sectioned: Bool { server.sectionCount != 1 || server.keys.first != .null }

    /// The index among `slots` and the section of row `id` with `values`, or `nil`.
    func place(_ id: WireValue, _ values: [WireValue], _ placement: PendingPlacement, among slots: [OverlaySlot]) -> (index: Int, section: Int)? {
        switch placement {
        case .sorted:
            guard let order, server.sectionCount > 0 else { return nil }
            // The server's rows held are in its order: find the gap among them, then the place
            // among the pending rows already in that gap.
            let settled = slots.indices.filter { !slots[$0].isPending }
            func comesBefore(_ slot: OverlaySlot) -> Bool? {
                guard let otherID = slot.id, let other = slot.values else { return nil }
                return order.compare((id, values), (otherID, other)) < 0
            }
            var low = 0, high = settled.count
            while low < high {
                let middle = (low + high) / 2
                guard let before = comesBefore(slots[settled[middle]]) else { return nil }
                if before { high = middle } else { low = middle + 1 }
            }
            // A place before the first row held or after the last is exact only at the list's ends.
            if low == 0, region.lowerBound > 0 { return nil }
            if low == settled.count, region.upperBound < server.count { return nil }
            var index = low > 0 ? settled[low - 1] + 1 : 0
            let runEnd = low < settled.count ? settled[low] : slots.count
            while index < runEnd {
                guard let before = comesBefore(slots[index]) else { return nil }
                if before { break }
                index += 1
            }
            low = index
            let first = low > 0 ? slots[low - 1].section : 0
            let last = low < slots.count ? slots[low].section : server.sectionCount - 1
            guard first <= last else { return nil }
            guard sectioned else { return (low, first) }
            guard let column = order.terms.first?.column, column < values.count,
                  let section = (first...last).first(where: { server.keys[$0] == values[column] }) else { return nil }
            return (low, section)
        case let .first(key):
            guard let section = server.keys.firstIndex(of: key) else { return nil }
            let start = server.starts[section]
            guard region.lowerBound <= start, start <= region.upperBound else { return nil }
            return (slots.firstIndex { $0.section >= section } ?? slots.count, section)
        case let .last(key):
            guard let section = server.keys.firstIndex(of: key) else { return nil }
            let end = server.starts[section + 1]
            guard region.lowerBound <= end, end <= region.upperBound else { return nil }
            return (slots.firstIndex { $0.section > section } ?? slots.count, section)
        }
    }
}
