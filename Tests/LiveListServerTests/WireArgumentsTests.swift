import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListWire
import Testing

@Suite("New arguments", .serialized)
struct WireArgumentsTests {
    @Test("New arguments are one changeset from the list shown to the new one (no reset), through the strict view; bad ones are a typed error and change nothing")
    @MainActor
    func argumentsAreOneChangeset() async throws {
        let fixture = try await WireFixture.start(rows: 200, seed: 5)
        let client = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40)
        try await eventually("first state") { try client.matches(fixture.select()) }
        client.remote.setArguments(["folder": .text("archive")])
        try await eventually("the archive") { try client.matches(fixture.select(folder: "archive")) }
        #expect(client.remote.resetsReceived == 1)
        #expect(client.view.batchCount >= 1)
        // The moved subscription follows commits to its new list.
        var random = SeededRandomNumberGenerator(seed: 5)
        try await fixture.randomWrites(10, &random)
        try await eventually("commits after the move") { try client.matches(fixture.select(folder: "archive")) }
        // Back, then a bad argument: a typed error, the subscription goes on as it was.
        client.remote.setArguments(["folder": .text("inbox")])
        try await eventually("the inbox again") { try client.matches(fixture.select()) }
        client.remote.setArguments(["folder": .integer(3)])
        try await eventually("a typed error") {
            if case let .failed(failure) = client.presenter.listState, case .server(let error)? = failure.error as? RemoteListError {
                return error.code == .badArguments
            }
            return false
        }
        try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET sender = 'after' WHERE folder = 'inbox'") }
        try await eventually("the inbox still followed") { try client.matches(fixture.select()) }
        #expect(client.remote.resetsReceived == 1)
        client.remote.stop()
        await fixture.stop()
    }

    @Test("New arguments whose list differs by more changes than a reset costs are a reset (argumentsChanged)")
    @MainActor
    func manyChangesAreAReset() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.resetThreshold = 5
        let fixture = try await WireFixture.start(rows: 200, seed: 6, configuration: configuration)
        let client = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40)
        try await eventually("first state") { try client.matches(fixture.select()) }
        client.remote.setArguments(["folder": .text("archive")])
        try await eventually("the archive") { try client.matches(fixture.select(folder: "archive")) }
        #expect(client.remote.resetsReceived == 2)
        #expect(client.remote.model.lastResetReason == .argumentsChanged)
        client.remote.stop()
        await fixture.stop()
    }

    @Test("The changes that answer new arguments restate the new list's order and effects: the filter the client derives pending rows with is the new one")
    @MainActor
    func argumentsRestateEffects() async throws {
        let fixture = try await WireFixture.start(rows: 60, seed: 8, mutations: DerivedEffectsTests.mutations)
        let client = WireClient(url: fixture.url, viewportRows: 12, window: 0..<80)
        try await eventually("first state") { try client.matches(fixture.select()) && client.remote.model.effects != nil }
        #expect(client.remote.model.effects?.filter == [WireCondition(column: "folder", test: .equal, operand: .value(.text("inbox")))])
        client.remote.setArguments(["folder": .text("archive")])
        try await eventually("the archive") { try client.matches(fixture.select(folder: "archive")) }
        #expect(client.remote.resetsReceived == 1, "answered by changes, not a reset")
        #expect(client.remote.model.effects?.filter == [WireCondition(column: "folder", test: .equal, operand: .value(.text("archive")))])
        #expect(client.remote.model.order != nil)
        client.remote.stop()
        await fixture.stop()
    }

    @Test("An argument holding NUL is the whole text: the list holds the rows of that folder, not of its part before the NUL")
    @MainActor
    func argumentWithNUL() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 9)
        try await fixture.pool.write { db in
            try db.execute(sql: "UPDATE message SET folder = CAST(X'696E00626F78' AS TEXT) WHERE id % 3 = 0")   // "in\0box"
            try db.execute(sql: "UPDATE message SET folder = 'in' WHERE id % 3 = 1")
        }
        let exact = try await fixture.pool.read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM message WHERE folder = CAST(X'696E00626F78' AS TEXT) ORDER BY day DESC, sender, id")
        }
        #expect(!exact.isEmpty)
        let remote = RemoteLiveQuery(url: fixture.url, query: "inbox", arguments: ["folder": .text("in\u{0}box")], window: 0..<100)
        remote.start()
        try await eventually("the folder's rows") {
            let state = remote.model.state
            return state.count == exact.count && (0..<state.count).map { state.row(at: $0).id } == exact.map { .row(.integer($0)) }
        }
        remote.stop()
        await fixture.stop()
    }
}
