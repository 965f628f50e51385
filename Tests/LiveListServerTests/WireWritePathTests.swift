import Foundation
import GRDB
import Hummingbird
import HummingbirdWebSocket
import ListTesting
import LiveListClient
@testable import LiveListServer
import LiveListServerSQLite
import LiveListWire
import Logging
import ServiceLifecycle
import Testing

/// The two ways frames leave the server: straight to the channel on its event loop (a router
/// whose context keeps the channel, as `application` builds), or through hummingbird-websocket's
/// writer (any other context, and connections that negotiated permessage-deflate).
@Suite("Write paths", .serialized)
struct WireWritePathTests {
    @Test("A commit reaches every connection of an event loop with one hop to that loop, not one per connection")
    @MainActor
    func oneHopPerLoop() async throws {
        let fixture = try await WireFixture.start(rows: 200, seed: 21)
        let clients = (0..<24).map { _ in WireClient(url: fixture.url, viewportRows: 10, window: 0..<30) }
        try await eventually("subscribed") { try clients.allSatisfy { $0.matches(try fixture.select()) } }
        for round in 0..<3 {
            let before = fixture.server.loopWriters.statistics
            // A content change in the window: one changeset with a row, no window moves.
            try await fixture.pool.write { db in
                let id = try #require(try Int64.fetchOne(db, sql: "SELECT id FROM message WHERE folder = 'inbox' ORDER BY day DESC, sender, id LIMIT 1"))
                try db.execute(sql: "UPDATE message SET subject = ? WHERE id = ?", arguments: ["round \(round) é\0", id])
            }
            try await eventually("round \(round)") { try clients.allSatisfy { $0.matches(try fixture.select()) } }
            let after = fixture.server.loopWriters.statistics
            #expect(after.loops >= 1)
            #expect(after.hops - before.hops <= after.loops, "24 connections on \(after.loops) loops cost \(after.hops - before.hops) hops")
        }
        for client in clients { client.remote.stop() }
        await fixture.stop()
    }

    @Test("Through a router whose context does not keep the channel (hummingbird-websocket's writer), clients equal the SELECT after random commits, and a message larger than a frame arrives whole")
    @MainActor
    func writerTaskPath() async throws {
        let fixture = try await WireFixture.start(rows: 1_200, seed: 22)
        let server = LiveListServer(database: fixture.pool, queries: [WireFixture.inbox], logger: Logger(label: "test.basic"))
        let router = Router(context: BasicWebSocketRequestContext.self)
        server.addRoutes(to: router)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router),
                              configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                              services: [server], onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
                              logger: Logger(label: "test.basic"))
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "test.basic")))
        let running = Task { try await group.run() }
        let timer = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield(-1)
        }
        var port = -1
        for await bound in ports {
            port = bound
            break
        }
        timer.cancel()
        guard port > 0 else { throw TimeLimitExceeded(what: "the server listens") }
        let url = "ws://127.0.0.1:\(port)/live"
        let small = WireClient(url: url, viewportRows: 10, window: 0..<30)
        // 1,200 rows: the first reset is far over one 16 KiB frame.
        let large = WireClient(url: url, viewportRows: 10, window: 0..<2_000)
        try await eventually("subscribed") { try [small, large].allSatisfy { $0.matches(try fixture.select()) } }
        var random = SeededRandomNumberGenerator(seed: 22)
        for round in 0..<4 {
            try await fixture.randomWrites(6, &random)
            try await eventually("round \(round)") { try [small, large].allSatisfy { $0.matches(try fixture.select()) } }
        }
        #expect(server.loopWriters.statistics.hops == 0, "no connection was written directly")
        small.remote.stop()
        large.remote.stop()
        await group.triggerGracefulShutdown()
        _ = await running.result
        await fixture.stop()
    }
}
