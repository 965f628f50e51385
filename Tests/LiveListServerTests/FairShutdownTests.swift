import Foundation
import GRDB
@testable import LiveListServer
import LiveListWire
import OwnThread
import Testing

/// Shutdown is fair: a client that stopped reading holds up no other client's close. Every
/// client that reads gets its 1001 while the stalled one is still connected (it is closed only
/// when the drain time is over).
@Suite("Fair shutdown", .serialized, .timeLimit(.minutes(2)))
struct FairShutdownTests {
    static func subscribe(window: Int) -> String { #"{"type":"subscribe","sub":1,"query":"inbox","window":[0,\#(window)]}"# }

    @Test("five reading clients get 1001 while a sixth that never reads still holds its socket")
    func readersCloseBesideAStalledClient() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.drainTimeout = .seconds(6)
        let fixture = try await WireFixture.start(rows: 2_000, seed: 42, configuration: configuration)
        try await fixture.pool.write { db in
            try db.execute(sql: "UPDATE message SET subject = subject || printf('%.2000c', 'x'), folder = 'inbox'")
        }
        let port = fixture.port
        // Never reads after its upgrade: its window's 2,000 rows of 2 KB fill its small receive
        // buffer, the kernel's send buffer and the server's queue towards it.
        let stalled = try await onOwnThread {
            let stalled = try RawConnection(port: port, receiveBuffer: 4_096)
            guard try stalled.upgrade().contains("101") else { throw RawConnection.Failure(description: "no upgrade") }
            try stalled.sendFrame(opcode: 0x1, Array(Self.subscribe(window: 2_000).utf8))
            return stalled
        }
        let readers = try await onOwnThread {
            try (0..<5).map { _ in
                let reader = try RawConnection(port: port)
                guard try reader.upgrade().contains("101") else { throw RawConnection.Failure(description: "no upgrade") }
                try reader.sendFrame(opcode: 0x1, Array(Self.subscribe(window: 3).utf8))
                return reader
            }
        }
        // Each reader reads until its close frame (or the socket's end: `nil`), on a thread of its own.
        let closes = readers.map { reader in Task { try await onOwnThread { try reader.closeCode() } } }
        // Commits keep coming to every client until the server's queue for the stalled one is full.
        for round in 0..<5 {
            try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET sender = ? WHERE id % 3 = 0", arguments: ["r\(round)"]) }
        }
        try await waitForSubscriptions(6, fixture.server)
        // Commits go on while the server shuts down.
        let pool = fixture.pool
        let writing = Task {
            for round in 5..<200 where !Task.isCancelled {
                try await pool.write { db in try db.execute(sql: "UPDATE message SET sender = ? WHERE id % 7 = ?", arguments: ["r\(round)", round % 7]) }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        defer { writing.cancel() }
        let stopping = Task { await fixture.stop() }
        var codes: [UInt16?] = []
        for close in closes { codes.append(try await close.value) }
        // Counted, not timed: the stalled client is closed only when the drain time is over, so a
        // close that came while it still holds its socket did not wait for it.
        let stalledOpen = await fixture.server.registry.connectionCount > 0
        await stopping.value
        #expect(codes == Array(repeating: WireCloseCode.goingAway.rawValue, count: 5), "the readers' closes: \(codes)")
        #expect(stalledOpen, "the readers' closes came when the stalled client was closed, at the end of the drain time")
        stalled.close()
        for reader in readers { reader.close() }
    }

    /// Waits (at most 30 s) until the server holds `count` subscriptions.
    private func waitForSubscriptions(_ count: Int, _ server: LiveListServer) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while server.registry.figures.subscriptions < count {
            guard ContinuousClock.now < deadline else { throw TimeLimitExceeded(what: "\(count) subscriptions") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
