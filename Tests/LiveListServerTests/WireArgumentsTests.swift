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
}
