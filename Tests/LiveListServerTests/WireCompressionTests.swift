import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import Testing

@Suite("permessage-deflate", .serialized)
struct WireCompressionTests {
    @Test("A server with permessage-deflate serves a client that offers it and one that does not; both equal the SELECT after random commits")
    @MainActor
    func compressedAndPlainClients() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.perMessageDeflate = true
        let fixture = try await WireFixture.start(rows: 300, seed: 11, configuration: configuration)
        let compressed = WireClient(url: fixture.url, viewportRows: 12, window: 0..<40, transport: WebSocketTransport(perMessageDeflate: true))
        let plain = WireClient(url: fixture.url, viewportRows: 12, window: 100..<140)
        plain.view.setContentOffset(100)
        try await eventually("first states") { try [compressed, plain].allSatisfy { $0.matches(try fixture.select()) } }
        var random = SeededRandomNumberGenerator(seed: 11)
        for round in 0..<5 {
            try await fixture.randomWrites(8, &random)
            try await eventually("round \(round)") { try [compressed, plain].allSatisfy { $0.matches(try fixture.select()) } }
        }
        // Messages over 16 KiB (every row of both windows gets a 1 KB subject): sent in fragments,
        // compressed as one message, joined by each client.
        try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET subject = subject || printf('%.1000c', 'z')") }
        try await eventually("messages in fragments") { try [compressed, plain].allSatisfy { $0.matches(try fixture.select()) } }
        compressed.remote.stop()
        plain.remote.stop()
        await fixture.stop()
    }
}
