import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListOffline
import LiveListServer
import LiveListWire
import Testing

/// Lists and mutations kept across launches in a local file: an app launched without its server
/// shows its last list at once, stale; resumes with one changeset; sends the mutations it left
/// pending, each applied once.
@Suite("Offline store", .serialized, .timeLimit(.minutes(2)))
@MainActor
struct OfflineStoreTests {
    static func storePath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("livelist-offline-\(UUID().uuidString).sqlite").path
    }

    /// Another connection to the store's file, as another process would open it: it waits for
    /// the store's locks, as the store waits for its.
    static func otherConnection(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// The rows of `remote`'s window shown: (id, values).
    static func held(_ remote: RemoteLiveQuery) -> [[WireValue]] {
        let state = remote.displayedState
        return remote.model.window.clamped(to: 0..<state.count).compactMap { remote.records.record(for: state.row(at: $0))?.values }
    }

    @Test("A relaunch shows the last list in its first frame, stale and bounded by the window, then resumes with one changeset to the SELECT; a damaged or mismatched snapshot is not shown")
    func listAcrossLaunches() async throws {
        let fixture = try await WireFixture.start(rows: 300, seed: 23)
        var random = SeededRandomNumberGenerator(seed: 23)
        let path = Self.storePath()
        // First launch: the list followed and kept (written a moment after it changes).
        let first = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40)
        var store: OfflineStore? = try OfflineStore(path: path)
        #expect(try store?.keep(first.remote, as: "inbox") == .nothingSaved)
        try await eventually("first state") { first.matches(try fixture.select()) }
        try await fixture.randomWrites(5, &random)
        try await eventually("caught up") { first.matches(try fixture.select()) }
        try await eventually("written") { try store?.savedList("inbox")?.list.version == first.remote.model.version }
        let saved = try #require(try store?.savedList("inbox"))
        #expect(saved.list.rows.count <= 40, "the window's rows, not the list's \(first.remote.model.state.count)")
        #expect(saved.list.sections.map(\.count).reduce(0, +) == first.remote.model.state.count)
        let lastShown = Self.held(first.remote)
        first.remote.stop()
        store = nil

        // Meanwhile, the database changes.
        try await fixture.randomWrites(8, &random)

        // Second launch: the list is in the first frame, before any connection.
        let relaunched = try OfflineStore(path: path)
        let second = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40, startsAtOnce: false)
        guard case let .restored(savedAt) = try relaunched.keep(second.remote, as: "inbox") else {
            Issue.record("not restored")
            return
        }
        #expect(second.remote.staleSince == savedAt)
        #expect(Self.held(second.remote) == lastShown)
        #expect(second.presenter.displayed.model.stateID == second.remote.displayedState.stateID)
        #expect(second.view.violations.isEmpty)
        #expect(second.view.staleCells(recordsEqual: ==).isEmpty)
        #expect(!second.view.visibleItems.isEmpty)
        #expect(second.view.visibleItems.allSatisfy { if case .record? = second.view.cellContent(at: $0) { true } else { false } })

        // Connected: one changeset from the snapshot's version, no reset.
        second.remote.start()
        try await eventually("resumed") { second.matches(try fixture.select()) }
        #expect(second.remote.staleSince == nil)
        #expect(second.remote.resetsReceived == 0)

        // A snapshot of other arguments is not shown; a damaged one neither, and the list follows.
        // Written now: a background write that took its snapshot earlier (slow on a loaded
        // machine) carries an older sequence, so it cannot land over the damage made below.
        try relaunched.save()
        let other = RemoteLiveQuery(url: fixture.url, query: "inbox", arguments: ["folder": .text("archive")])
        #expect(try relaunched.keep(other, as: "inbox") == .notRestored(.otherArguments))
        #expect(other.model.version == nil)
        relaunched.forget("inbox")
        let database = try Self.otherConnection(path)
        try await database.write { db in try db.execute(sql: "UPDATE livelist_offline_list SET list = substr(list, 1, 40)") }
        let third = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40, startsAtOnce: false)
        guard case .damaged = try relaunched.keep(third.remote, as: "inbox") else {
            Issue.record("a damaged snapshot was shown")
            return
        }
        #expect(third.remote.model.version == nil)
        third.remote.start()
        try await eventually("follows") { third.matches(try fixture.select()) }
        for client in [second, third] { client.remote.stop() }
        await fixture.stop()
    }

    @Test("Mutations made while the server is away stay pending across a relaunch — numbered before they are sent, their rows shown pending again — and land once when it is back")
    func mutationsAcrossLaunches() async throws {
        var fixture = try await WireFixture.start(rows: 40, seed: 5, mutations: PendingChangesTests.mutations)
        let path = Self.storePath()
        let ids = try fixture.select().rows.prefix(3).map { $0[0] }
        var store: OfflineStore? = try OfflineStore(path: path)
        let list = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40)
        try store?.keep(list.remote, as: "inbox")
        var mutator = try #require(try store?.mutator(url: fixture.url))
        #expect(try store?.mutator(url: fixture.url) === mutator, "one mutator per server: two would give one number twice")
        try await eventually("first state") { list.matches(try fixture.select()) }
        let client = mutator.client
        try await within("a first mutation") { _ = try await mutator.mutate("archive", arguments: ["id": ids[0]]) }
        await fixture.stop()

        // Offline: two mutations wait; their numbers are kept before they are sent.
        var waiting: [Task<WireMutated, any Error>] = []
        for id in ids.dropFirst() {
            let mutator = mutator
            let effects = [PendingEffect(list.remote, [.delete(id: id)])]
            waiting.append(Task { @MainActor in try await mutator.mutate("archive", arguments: ["id": id], expecting: effects) })
        }
        try await eventually("pending") { mutator.pendingCount == 2 && list.remote.pendingChangesCount == 2 }
        let kept = try Self.otherConnection(path)
        #expect(try await kept.read { db in try Int64.fetchOne(db, sql: "SELECT next_id FROM livelist_offline_mutator") } == 4)
        #expect(try await kept.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM livelist_offline_mutation") } == 2)
        mutator.stop()
        for task in waiting { await #expect(throws: CancellationError.self) { try await task.value } }
        #expect(list.remote.pendingChangesCount == 2, "still pending after stop()")
        try store?.save()
        list.remote.stop()
        store = nil

        // A damaged row costs its own mutation only (reported, its number not given again).
        try await kept.write { db in
            try db.execute(sql: "INSERT INTO livelist_offline_mutation (client, id, message) VALUES (?, 99, 'not a message')", arguments: [client])
        }

        // Relaunched, and the server back: the two land once, in order; the next is number 4.
        let relaunched = try OfflineStore(path: path)
        let again = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40, startsAtOnce: false)
        guard case .restored = try relaunched.keep(again.remote, as: "inbox") else {
            Issue.record("the list was not restored")
            return
        }
        mutator = try relaunched.mutator(url: fixture.url)
        #expect(relaunched.unreadableMutations == [99])
        // The archived rows are gone from the first frame, pending.
        #expect(again.remote.pendingChangesCount == 2)
        let shown = Self.held(again.remote).map { $0[0] }
        #expect(!shown.contains(ids[1]) && !shown.contains(ids[2]) && shown.contains(ids[0]) == false)
        #expect(again.remote.model.state.count == again.remote.displayedState.count + 2)
        #expect(mutator.client == client)
        #expect(mutator.nextID == 4)
        #expect(mutator.pendingCount == 2)
        fixture = try await fixture.restart(mutations: PendingChangesTests.mutations)
        again.remote.start()
        mutator.start()
        try await eventually("sent again and answered") { mutator.pendingCount == 0 }
        try await eventually("the list shows the commits, nothing pending") {
            try again.remote.pendingChangesCount == 0 && again.matches(fixture.select())
        }
        try await within("the next mutation") { _ = try? await mutator.mutate("archive", arguments: ["id": ids[0]]) }
        let (archived, last) = try await fixture.pool.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM message WHERE folder = 'archive' AND id IN (\(ids.map { "\($0)" }.joined(separator: ",")))"),
             try Int64.fetchOne(db, sql: "SELECT last_id FROM livelist_mutation_client WHERE client = ?", arguments: [client]))
        }
        #expect(archived == 3)
        #expect(last == 4)
        #expect(try await kept.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM livelist_offline_mutation") } == 0)
        mutator.stop()
        again.remote.stop()
        await fixture.stop()
    }

    @Test("A mutation the app's keeper cannot keep is not sent, and its number is given again")
    func notKept() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 3, mutations: PendingChangesTests.mutations)
        let mutator = RemoteMutator(url: fixture.url, client: "keeper")
        defer { mutator.stop() }
        let id = try #require(try fixture.select().rows.first?[0])
        struct DiskFull: Error {}
        mutator.onPendingChange = { throw DiskFull() }
        await #expect(throws: RemoteMutatorError.notKept("DiskFull()")) {
            try await mutator.mutate("archive", arguments: ["id": id])
        }
        #expect(mutator.nextID == 1 && mutator.pendingCount == 0)
        mutator.onPendingChange = nil
        try await within("kept this time") {
            let mutated = try await mutator.mutate("archive", arguments: ["id": id])
            #expect(mutated.id == 1 && !mutated.duplicate)
        }
        await fixture.stop()
    }

    @Test("Opening the store waits for a lock another connection to its file holds, instead of failing with SQLITE_BUSY")
    func waitsForAnotherConnection() async throws {
        let path = Self.storePath()
        _ = try OfflineStore(path: path)
        let other = try Self.otherConnection(path)
        let (locked, lockedContinuation) = AsyncStream<Void>.makeStream()
        let holding = Task.detached {
            try other.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN EXCLUSIVE")
                lockedContinuation.yield()
                Thread.sleep(forTimeInterval: 0.3)
                try db.execute(sql: "COMMIT")
            }
        }
        try await within("the lock taken") {
            for await _ in locked { break }
        }
        let reopened = try OfflineStore(path: path)
        #expect(reopened.unreadableMutations.isEmpty)
        try await within("the lock let go") { try await holding.value }
    }
}
