import Foundation
import GRDB
import LiveListServer
import LiveListWire
import Testing

/// Clients no library would be: silent sockets, slow headers, half-closed sockets, a client that
/// stopped reading, frames at and past the limits, text that is not UTF-8. The server closes
/// each as documented, and shutdown ends within its drain time whatever they do.
@Suite("Hostile clients", .serialized, .timeLimit(.minutes(3)))
struct HostileClientTests {
    static let subscribe = #"{"type":"subscribe","sub":1,"query":"inbox","window":[0,2000]}"#

    /// Runs `body` on a thread of its own (blocking socket calls), waiting for it without
    /// holding a thread of the test's executor.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    @Test("a socket that sends nothing, one that sends its head a byte at a time, and one half-closed are closed after requestHeadTimeout; a prompt client is served")
    func requestHeadDeadline() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.requestHeadTimeout = .milliseconds(500)
        let fixture = try await WireFixture.start(rows: 5, seed: 2, configuration: configuration)
        let port = fixture.port
        let silent = try RawConnection(port: port)
        let slow = try RawConnection(port: port)
        let halfClosed = try RawConnection(port: port)
        try halfClosed.send("GET /live HTTP/1.1\r\n")
        halfClosed.shutdownWrites()
        let slowSender = Task.detached {
            for byte in Array("GET /live/health HTTP/1.1\r\nHost: x\r\n".utf8) {
                do { try slow.send([byte]) } catch { return }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let closed = try await Self.blocking {
            try [silent, slow, halfClosed].map { try $0.isClosedByServer(within: 5) }
        }
        slowSender.cancel()
        #expect(closed == [true, true, true], "silent, slow, half-closed: \(closed)")
        // A client that sends its upgrade at once is served as ever.
        let (messages, _) = try await exchange(fixture.url, [#"{"type":"subscribe","sub":1,"query":"inbox","window":[0,5]}"#], answers: 1)
        #expect(messages.first?.contains(#""type":"reset""#) ?? false, "\(messages)")
        for connection in [silent, slow, halfClosed] { connection.close() }
        await fixture.stop()
    }

    @Test("client messages: 65,536 bytes in one frame or in fragments pass; more is 1009, binary 1003, text that is not UTF-8 1007, a stray continuation 1002")
    func messageLimitsAndCodes() async throws {
        let fixture = try await WireFixture.start(rows: 5, seed: 3)
        let port = fixture.port
        // A valid message padded to the limit with spaces (JSON allows them between tokens).
        @Sendable func padded(to size: Int) -> [UInt8] {
            let message = Array(#"{"type":"unsubscribe","sub":77}"#.utf8)
            return message + [UInt8](repeating: 0x20, count: size - message.count)
        }
        func codeAfter(_ send: @escaping @Sendable (RawConnection) throws -> Void) async throws -> UInt16? {
            try await Self.blocking {
                let connection = try RawConnection(port: port)
                defer { connection.close() }
                #expect(try connection.upgrade().contains("101"))
                // The server may close while the frames are still being sent: its close is read below.
                do {
                    try send(connection)
                    // A closing frame of the client's own, after the test's: a server that kept the
                    // connection answers it with 1000.
                    try connection.sendFrame(opcode: 0x8, Array([0x03, 0xE8]))
                } catch {}
                return try connection.closeCode()
            }
        }
        let limit = 65_536
        let whole = try await codeAfter { try $0.sendFrame(opcode: 0x1, padded(to: limit)) }
        #expect(whole == 1000, "a 64 KiB message in one frame is accepted: \(String(describing: whole))")
        let fragments = try await codeAfter { connection in
            let bytes = padded(to: limit)
            for start in stride(from: 0, to: bytes.count, by: 16_384) {
                try connection.sendFrame(opcode: start == 0 ? 0x1 : 0x0, fin: start + 16_384 >= bytes.count, Array(bytes[start..<min(bytes.count, start + 16_384)]))
            }
        }
        #expect(fragments == 1000, "64 KiB in 16 KiB fragments is accepted: \(String(describing: fragments))")
        let tooBig = try await codeAfter { try $0.sendFrame(opcode: 0x1, padded(to: limit + 1)) }
        #expect(tooBig == 1009, "\(String(describing: tooBig))")
        let tooBigFragments = try await codeAfter { connection in
            let bytes = padded(to: limit + 10)
            for start in stride(from: 0, to: bytes.count, by: 16_384) {
                try connection.sendFrame(opcode: start == 0 ? 0x1 : 0x0, fin: start + 16_384 >= bytes.count, Array(bytes[start..<min(bytes.count, start + 16_384)]))
            }
        }
        #expect(tooBigFragments == 1009, "\(String(describing: tooBigFragments))")
        let binary = try await codeAfter { try $0.sendFrame(opcode: 0x2, [1, 2, 3]) }
        #expect(binary == 1003, "\(String(describing: binary))")
        let notUTF8 = try await codeAfter { try $0.sendFrame(opcode: 0x1, Array(#"{"type":"unsubscribe","sub":1,"x":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)) }
        #expect(notUTF8 == 1007, "\(String(describing: notUTF8))")
        let stray = try await codeAfter { try $0.sendFrame(opcode: 0x0, Array("{}".utf8)) }
        #expect(stray == 1002, "\(String(describing: stray))")
        await fixture.stop()
    }

    @Test("shutdown with a client that stopped reading, a silent socket and a slow header: a reading client gets 1001, and the server stops within drainTimeout")
    func shutdownDrains() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.drainTimeout = .seconds(1)
        configuration.requestHeadTimeout = .seconds(60)
        let fixture = try await WireFixture.start(rows: 2_000, seed: 4, configuration: configuration)
        try await fixture.pool.write { db in
            try db.execute(sql: "UPDATE message SET subject = subject || printf('%.2000c', 'x'), folder = 'inbox'")
        }
        let port = fixture.port
        // Stops reading once upgraded and subscribed: the window's 2,000 rows of 2 KB fill its
        // small socket buffer and the server's queue towards it.
        let stalled = try RawConnection(port: port, receiveBuffer: 4_096)
        #expect(try stalled.upgrade().contains("101"))
        try stalled.sendFrame(opcode: 0x1, Array(Self.subscribe.utf8))
        let silent = try RawConnection(port: port)
        let slowHeader = try RawConnection(port: port)
        try slowHeader.send("GET /live HTTP/1.1\r\nHost: 127")
        // The server keeps writing to the stalled client until its queue is full.
        for round in 0..<5 {
            try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET sender = ? WHERE id % 3 = 0", arguments: ["r\(round)"]) }
        }
        try await Task.sleep(for: .milliseconds(500))
        let steady = Task { try await exchange(fixture.url, [#"{"type":"subscribe","sub":1,"query":"inbox","window":[0,3]}"#], answers: 0) }
        try await Task.sleep(for: .milliseconds(300))
        let clock = ContinuousClock()
        let start = clock.now
        await fixture.stop()
        let took = start.duration(to: clock.now)
        #expect(took < .seconds(4), "shutdown took \(took) with a 1 s drain time")
        let (_, close) = try await steady.value
        #expect(close == WireCloseCode.goingAway.rawValue, "the reading client's close: \(String(describing: close))")
        for connection in [stalled, silent, slowHeader] { connection.close() }
    }
}
