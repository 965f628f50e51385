import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListServer
import LiveListWire
import Testing

/// Pending changes over a served list, end to end: shown at once through the presenter into a
/// strict headless view, laid over every changeset the server sends, turned into the server's
/// rows by the commit that carries them, taken back in one changeset.
@Suite("Pending changes", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct PendingChangesTests {
    /// A client whose every changeset is checked as it goes to the presenter: no identity is
    /// deleted and inserted in one changeset outside deleted or inserted sections.
    @MainActor
    final class Watched {
        let client: WireClient
        var deletedAndInserted: [WireValue] = []
        /// Identities a state handed to the presenter held twice.
        var shownTwice: [WireValue] = []
        /// Pending rows in the states handed to the presenter, counted once per state.
        var pendingRowsShown = 0
        /// Reloads of a held row that shows the same identity and version after them.
        var needlessReloads = 0
        var changesets = 0

        init(url: String, window: Range<Int>, viewportRows: Int, transport: any RemoteTransport = WebSocketTransport()) {
            client = WireClient(url: url, viewportRows: viewportRows, window: window, transport: transport)
            let cells = client.cells
            client.remote.onEvent = { [weak self] event in
                if case let .changes(changeset, _) = event { self?.check(changeset) }
                cells.receive(event)
            }
        }

        var remote: RemoteLiveQuery { client.remote }

        private func check(_ changeset: Changeset<RemoteSection, RemoteRow>) {
            changesets += 1
            var seen = Set<WireValue>()
            let shown = remote.displayedState
            for position in 0..<shown.count {
                let row = shown.row(at: position)
                guard case let .row(id) = row.id else { continue }
                if !seen.insert(id).inserted { shownTwice.append(id) }
                if remote.records.record(for: row)?.isPending == true { pendingRowsShown += 1 }
            }
            guard let before = changeset.before, let after = changeset.after else { return }
            let changes = changeset.changes
            let mapping = PathMapping(changes)
            // (A row the client does not hold reads as its position's placeholder before and after:
            // the server's reload of it replaces no cell content.)
            for path in changes.itemReloads {
                guard case .row = before.item(at: path).id, let target = mapping.newPath(ofOld: path) else { continue }
                if before.item(at: path) == after.item(at: target) { needlessReloads += 1 }
            }
            let deletedSections = Set(changes.sectionDeletes), insertedSections = Set(changes.sectionInserts)
            var deleted = Set<WireValue>()
            for path in changes.itemDeletes where !deletedSections.contains(path.section) {
                if case let .row(id) = before.item(at: path).id { deleted.insert(id) }
            }
            for path in changes.itemInserts where !insertedSections.contains(path.section) {
                if case let .row(id) = after.item(at: path).id, deleted.contains(id) { deletedAndInserted.append(id) }
            }
        }

        /// Why the view differs from the list shown (`nil`: it shows it, every cell current).
        func viewMismatch() -> String? {
            if !client.view.violations.isEmpty { return "violations \(client.view.violations)" }
            if client.presenter.displayed.model.stateID != remote.displayedState.stateID { return "view not caught up" }
            let stale = client.view.staleCells(recordsEqual: ==)
            if !stale.isEmpty { return "stale cells \(stale)" }
            return nil
        }
    }

    /// The server's held rows with `changes` laid over them, by a plain reading of the rules
    /// (linear scans over an array): nil when a held row has no values yet.
    static func expected(_ remote: RemoteLiveQuery, _ changes: [[PendingChange]]) -> [(id: WireValue, values: [WireValue], section: Int, pending: Bool)]? {
        let model = remote.model
        let state = model.state
        let region = model.window.clamped(to: 0..<state.count)
        var rows: [(id: WireValue, values: [WireValue], section: Int, pending: Bool)] = []
        for position in region {
            let row = state.row(at: position)
            guard case let .row(id) = row.id, let record = model.record(for: row), let path = state.path(ofPosition: position) else { return nil }
            rows.append((id, record.values, path.section, false))
        }
        let held = Set((0..<state.count).compactMap { position -> WireValue? in
            if case let .row(id) = state.row(at: position).id { return id }
            return nil
        })
        func place(_ id: WireValue, _ values: [WireValue], _ placement: PendingPlacement) -> (Int, Int)? {
            switch placement {
            case .sorted:
                guard let order = model.order else { return nil }
                // Among the server's rows (in its order), then among the pending rows in that gap.
                let settled = rows.indices.filter { !rows[$0].pending }
                let gap = settled.firstIndex { order.compare((id, values), (rows[$0].id, rows[$0].values)) < 0 } ?? settled.count
                if gap == 0 && region.lowerBound > 0 || gap == settled.count && region.upperBound < state.count { return nil }
                let runStart = gap > 0 ? settled[gap - 1] + 1 : 0, runEnd = gap < settled.count ? settled[gap] : rows.count
                let index = (runStart..<runEnd).first { order.compare((id, values), (rows[$0].id, rows[$0].values)) < 0 } ?? runEnd
                let low = index > 0 ? rows[index - 1].section : 0
                let high = index < rows.count ? rows[index].section : state.sectionCount - 1
                guard low <= high, let column = order.terms[0].column else { return nil }
                return (low...high).first { state.keys[$0] == values[column] }.map { (index, $0) }
            case let .first(key):
                guard let section = state.keys.firstIndex(of: key) else { return nil }
                let start = state.counts[..<section].reduce(0, +)
                guard region.lowerBound <= start, start <= region.upperBound else { return nil }
                return (rows.firstIndex { $0.section >= section } ?? rows.count, section)
            case let .last(key):
                guard let section = state.keys.firstIndex(of: key) else { return nil }
                let end = state.counts[...section].reduce(0, +)
                guard region.lowerBound <= end, end <= region.upperBound else { return nil }
                return (rows.firstIndex { $0.section > section } ?? rows.count, section)
            }
        }
        for change in changes.joined() {
            switch change {
            case let .insert(id, values, placement):
                guard !held.contains(id), !rows.contains(where: { $0.id == id }) else { continue }
                let row = model.columns.map { values[$0] ?? .null }
                if let (index, section) = place(id, row, placement) { rows.insert((id, row, section, true), at: index) }
            case let .update(id, values):
                guard let index = rows.firstIndex(where: { $0.id == id }) else { continue }
                var row = rows[index]
                for (name, value) in values { if let column = model.columns.firstIndex(of: name) { row.values[column] = value } }
                guard row.values != rows[index].values else { continue }
                rows.remove(at: index)
                row.pending = true
                if let (target, section) = place(id, row.values, .sorted) {
                    rows.insert((id, row.values, section, true), at: target)
                } else {
                    rows.insert(row, at: index)
                }
            case let .delete(id):
                rows.removeAll { $0.id == id }
            }
        }
        return rows
    }

    /// Why the list shown differs from the server's held rows with `changes` laid over them.
    static func overlayMismatch(_ remote: RemoteLiveQuery, _ changes: [[PendingChange]]) -> String? {
        guard let rows = expected(remote, changes) else { return nil }
        let shown = remote.displayedState
        let server = remote.model.state
        let start = remote.model.window.clamped(to: 0..<server.count).lowerBound
        let shift = rows.count - remote.model.window.clamped(to: 0..<server.count).count
        if shown.count != server.count + shift { return "count \(shown.count), expected \(server.count + shift)" }
        var ids = Set<WireValue>()
        for (offset, row) in rows.enumerated() {
            let item = shown.row(at: start + offset)
            guard item.id == .row(row.id), let record = remote.records.record(for: item) else {
                return "row \(start + offset): \(item.id), expected \(row.id)"
            }
            guard record.values == row.values else { return "row \(start + offset): \(record.values), expected \(row.values)" }
            guard shown.path(ofPosition: start + offset)?.section == row.section else { return "row \(start + offset) in another section" }
            guard ids.insert(row.id).inserted else { return "\(row.id) shown twice" }
            // Pending: a row the server does not hold, or one a pending update changed — even when
            // a later one brought its values back to the server's (the changes are not confirmed).
            let serverRow = (0..<server.count).lazy.map { server.row(at: $0) }.first { $0.id == .row(row.id) }
            let differs = serverRow.flatMap { remote.model.record(for: $0)?.values } != row.values
            guard record.isPending == row.pending, !differs || row.pending else {
                return "row \(start + offset) (\(row.id)): isPending \(record.isPending), expected \(row.pending)"
            }
        }
        return nil
    }

    @Test("Pending inserts, updates and deletes over random commits: the view shows the server's rows with the changes laid over them after every step, a confirmed change becomes the server's row without a delete and insert, and the list equals the SELECT once nothing is pending")
    func randomOverlay() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("pending changes")
        var random = SeededRandomNumberGenerator(seed: seed)
        let fixture = try await WireFixture.start(rows: 160, seed: seed)
        let watched = [Watched(url: fixture.url, window: 0..<40, viewportRows: 14), Watched(url: fixture.url, window: 30..<70, viewportRows: 12)]
        watched[1].client.view.setContentOffset(40)
        try await eventually("first states (seed \(seed))") { try watched.allSatisfy { $0.client.matches(try fixture.select()) } }
        var shown: [[(id: PendingChangesID, changes: [PendingChange])]] = [[], []]
        var nextID: Int64 = 100_000
        var confirmed = 0
        var pendingRowsSeen = 0
        for round in 0..<150 {
            let which = random.next(upTo: 2)
            let remote = watched[which].remote
            switch random.next(upTo: 6) {
            case 0, 1, 2:
                // Show a pending change about a row held, or a new one.
                let state = remote.displayedState
                let held = remote.model.window.clamped(to: 0..<state.count).compactMap { position -> WireValue? in
                    if case let .row(id) = state.row(at: position).id { return id }
                    return nil
                }
                var changes: [PendingChange] = []
                for _ in 0..<random.next(upTo: 2) + 1 {
                    let kind = random.next(upTo: 3)
                    if kind == 0 || held.isEmpty {
                        nextID += 1
                        let day = Int64(random.next(upTo: 8))
                        let placement: PendingPlacement = switch random.next(upTo: 4) {
                        case 0: .first(inSection: .integer(day))
                        case 1: .last(inSection: .integer(day))
                        default: .sorted
                        }
                        changes.append(.insert(id: .integer(nextID), values: ["id": .integer(nextID), "day": .integer(day),
                                                                             "sender": .text(WireFixture.text(&random)), "subject": .text("pending")],
                                               placement: placement))
                    } else {
                        let id = held[random.next(upTo: held.count)]
                        changes.append(kind == 1 ? .update(id: id, values: random.next(upTo: 2) == 0 ? ["sender": .text(WireFixture.text(&random))]
                                                                                         : ["day": .integer(Int64(random.next(upTo: 8)))])
                                                 : .delete(id: id))
                    }
                }
                shown[which].append((remote.showPending(changes), changes))
            case 3:
                // The server applies a pending change, as its mutation would.
                guard let entry = shown[which].first else { continue }
                try await fixture.pool.write { db in
                    for change in entry.changes {
                        switch change {
                        case let .insert(id, values, _):
                            guard case let .integer(number) = id, case let .integer(day)? = values["day"], case let .text(sender)? = values["sender"] else { continue }
                            try db.execute(sql: "INSERT OR REPLACE INTO message(id, day, sender, subject, folder) VALUES (?, ?, ?, 'pending', 'inbox')",
                                           arguments: [number, day, sender])
                        case let .update(id, values):
                            guard case let .integer(number) = id else { continue }
                            if case let .text(sender)? = values["sender"] { try db.execute(sql: "UPDATE message SET sender = ? WHERE id = ?", arguments: [sender, number]) }
                            if case let .integer(day)? = values["day"] { try db.execute(sql: "UPDATE message SET day = ? WHERE id = ?", arguments: [day, number]) }
                        case let .delete(id):
                            guard case let .integer(number) = id else { continue }
                            try db.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [number])
                        }
                    }
                }
                try await within("round \(round): sync") { _ = try await remote.upToDate() }
                remote.withdrawPending(entry.id)
                shown[which].removeFirst()
                confirmed += 1
            case 4:
                // Refused: taken back.
                guard !shown[which].isEmpty else { continue }
                let index = random.next(upTo: shown[which].count)
                remote.withdrawPending(shown[which].remove(at: index).id)
            default:
                try await fixture.randomWrites(random.next(upTo: 3) + 1, &random)
            }
            if random.next(upTo: 5) == 0 {
                let count = watched[1].remote.displayedState.count
                watched[1].client.view.setContentOffset(random.next(upTo: max(1, count)))
            }
            for (index, client) in watched.enumerated() {
                let changes = shown[index].map(\.changes)
                defer {
                    let state = client.remote.displayedState
                    pendingRowsSeen += (0..<state.count).filter { client.remote.records.record(for: state.row(at: $0))?.isPending == true }.count
                }
                do {
                    try await eventually("round \(round), client \(index) (seed \(seed))") {
                        client.viewMismatch() == nil && Self.overlayMismatch(client.remote, changes) == nil
                            && Self.expected(client.remote, changes) != nil
                    }
                } catch {
                    print("round \(round), client \(index): view \(client.viewMismatch() ?? "ok"), overlay \(Self.overlayMismatch(client.remote, changes) ?? "ok")")
                    throw error
                }
            }
        }
        for (index, client) in watched.enumerated() {
            for entry in shown[index] { client.remote.withdrawPending(entry.id) }
            #expect(client.remote.pendingChangesCount == 0)
            #expect(client.deletedAndInserted.isEmpty, "seed \(seed): \(client.deletedAndInserted)")
            #expect(client.shownTwice.isEmpty, "seed \(seed): \(client.shownTwice)")
            #expect(client.needlessReloads == 0, "seed \(seed)")
        }
        try await eventually("nothing pending (seed \(seed))") {
            try watched.allSatisfy { $0.client.matches(try fixture.select()) && $0.remote.displayedState.stateID == $0.remote.model.state.stateID }
        }
        #expect(confirmed > 3)
        #expect(pendingRowsSeen > 20, "seed \(seed)")
        print("pending changes: \(confirmed) confirmed, \(pendingRowsSeen) pending rows seen, \(watched.map(\.changesets)) changesets")
        for client in watched { client.remote.stop() }
        await fixture.stop()
    }
}

extension PendingChangesTests {
    static let mutations = [
        PublishedMutation(name: "archive", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("UPDATE message SET folder = 'archive' WHERE id = :id AND folder = 'inbox'", mustChangeRows: true)]),
        PublishedMutation(name: "compose", parameters: [QueryParameter("id", type: .integer, default: .null), QueryParameter("day", type: .integer),
                                                        QueryParameter("sender", type: .text)],
                          statements: [.init("INSERT INTO message (id, day, sender, subject, folder) VALUES (:id, :day, :sender, 'composed', 'inbox')")]),
    ]

    @Test("mutate(expecting:) shows the effect before the server answers, the commit turns it into the server's row without a delete and insert, a refusal takes it back, and an optional parameter left out is NULL")
    func mutatorShowsPendingRows() async throws {
        let fixture = try await WireFixture.start(rows: 60, seed: 7, mutations: Self.mutations)
        let watched = Watched(url: fixture.url, window: 0..<60, viewportRows: 20)
        let mutator = RemoteMutator(url: fixture.url, client: "pending-test")
        defer {
            mutator.stop()
            watched.remote.stop()
        }
        try await eventually("first state") { watched.client.matches(try fixture.select()) }
        let remote = watched.remote
        func shows(_ id: WireValue) -> RemoteRecord? {
            let state = remote.displayedState
            return (0..<state.count).lazy.compactMap { remote.records.record(for: state.row(at: $0)) }.first { $0.id == id }
        }

        // A new row, placed where the server's order puts it, pending until the server answers.
        let (_, day, _, _) = try #require(try fixture.select().rows.dropFirst(5).first.map { ($0[0], $0[1], $0[2], $0[3]) })
        let newID = WireValue.integer(9_000_001)
        let values: [String: WireValue] = ["id": newID, "day": day, "sender": .text("é\u{0}m"), "subject": .text("composed")]
        let compose = Task { @MainActor in
            try await mutator.mutate("compose", arguments: ["id": newID, "day": day, "sender": .text("é\u{0}m")],
                                     expecting: [PendingEffect(remote, [.insert(id: newID, values: values)])])
        }
        try await eventually("the pending row shows") { shows(newID)?.isPending == true && watched.viewMismatch() == nil }
        _ = try await within("compose answered") { _ = try await compose.value }
        #expect(shows(newID)?.isPending == false)
        #expect(remote.pendingChangesCount == 0)
        try await eventually("the server's row") { watched.client.matches(try fixture.select()) && watched.viewMismatch() == nil }

        // An archive: the row leaves at once and does not come back.
        let archived = try #require(try fixture.select().rows.dropFirst(2).first?[0])
        let archive = Task { @MainActor in
            try await mutator.mutate("archive", arguments: ["id": archived], expecting: [PendingEffect(remote, [.delete(id: archived)])])
        }
        try await eventually("the row leaves") { shows(archived) == nil && watched.viewMismatch() == nil }
        _ = try await within("archive answered") { _ = try await archive.value }
        #expect(shows(archived) == nil)

        // Archiving it again is refused: the row, hidden while pending, stays gone (the server's
        // list does not have it); a refused change to a row the server has comes back.
        let kept = try #require(try fixture.select().rows.first?[0])
        try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET folder = 'archive' WHERE id = ?", arguments: [kept.integerValue]) }
        try await eventually("the archive shows") { shows(kept) == nil }
        try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET folder = 'inbox' WHERE id = ?", arguments: [kept.integerValue]) }
        try await eventually("the row is back") { shows(kept) != nil }
        let changesetsBefore = watched.changesets
        do {
            _ = try await mutator.mutate("archive", arguments: ["id": .integer(-1)], expecting: [PendingEffect(remote, [.delete(id: kept)])])
            Issue.record("archiving a missing row was applied")
        } catch let RemoteListError.server(error) {
            #expect(error.code == .conflict)
        }
        #expect(shows(kept)?.isPending == false)
        #expect(watched.changesets >= changesetsBefore + 2, "hidden, then shown again")
        try await eventually("back as it was") { watched.client.matches(try fixture.select()) && watched.viewMismatch() == nil }

        // Left out, the optional identity is NULL: the database numbers the row.
        _ = try await within("compose without an id") {
            _ = try await mutator.mutate("compose", arguments: ["day": day, "sender": .text("n")], showingIn: [remote])
        }
        let numbered = try await fixture.pool.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM message WHERE sender = 'n' AND id IS NOT NULL") }
        #expect(numbered == 1)
        #expect(watched.deletedAndInserted.isEmpty, "\(watched.deletedAndInserted)")
        await fixture.stop()
    }
}

private extension WireValue {
    var integerValue: Int64? { if case let .integer(value) = self { value } else { nil } }
}
