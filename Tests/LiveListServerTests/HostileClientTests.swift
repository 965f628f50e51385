import Foundation
import GRDB
import ListTesting
import LiveListServer
import LiveListWire
import OwnThread
import Testing

/// Clients no library would be: silent sockets, slow headers, half-closed sockets, a client that
/// stopped reading, frames at and past the limits, text that is not UTF-8. The server closes
/// each as documented, and shutdown ends within its drain time whatever they do.
@Suite("Hostile clients", .serialized, .timeLimit(.minutes(3)))
struct HostileClientTests {
    static let subscribe = #"{"type":"subscribe","sub":1,"query":"inbox","window":[0,2000]}"#

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
        let closed = try await onOwnThread {
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
            try await onOwnThread {
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

    @Test("a soak: silent sockets, slow headers, stalled readers, a flood of subscriptions and malformed frames beside a steady client, which equals the SELECT after every round of writes; then shutdown within its drain time")
    @MainActor
    func soak() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.requestHeadTimeout = .seconds(2)
        configuration.drainTimeout = .seconds(2)
        configuration.outboundByteLimit = 256 << 10
        let fixture = try await WireFixture.start(rows: 500, seed: 8, configuration: configuration)
        let port = fixture.port
        let steady = WireClient(url: fixture.url, viewportRows: 10, window: 0..<50)
        try await eventually("the steady client's first state") { steady.matches(try fixture.select()) }
        var random = SeededRandomNumberGenerator(seed: 81)
        let clock = ContinuousClock()
        /// Random writes, then the time until the steady client shows the SELECT's answer.
        func round() async throws -> Duration {
            try await fixture.randomWrites(3, &random)
            let start = clock.now
            try await eventually("the steady client equals the SELECT") { steady.matches(try fixture.select()) }
            return start.duration(to: clock.now)
        }
        var quiet: [Duration] = []
        for _ in 0..<10 { quiet.append(try await round()) }

        // The hostile clients, each on a thread of its own, until `stop`.
        let stop = HostileStop()
        var hostile: [Thread] = []
        func spawn(_ body: @escaping @Sendable () throws -> Void) {
            let thread = Thread {
                do { try body() } catch {}
            }
            thread.start()
            hostile.append(thread)
        }
        let closeCodes = HostileCounts()
        for _ in 0..<10 {
            spawn { let silent = try RawConnection(port: port); defer { silent.close() }; while !stop.isSet { usleep(50_000) } }
            spawn {
                let slow = try RawConnection(port: port)
                defer { slow.close() }
                for byte in Array("GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n".utf8) where !stop.isSet {
                    try slow.send([byte])
                    usleep(150_000)
                }
            }
        }
        for _ in 0..<3 {
            spawn {
                let stalled = try RawConnection(port: port, receiveBuffer: 4_096)
                defer { stalled.close() }
                _ = try stalled.upgrade()
                try stalled.sendFrame(opcode: 0x1, Array(Self.subscribe.utf8))
                while !stop.isSet { usleep(50_000) }
            }
        }
        spawn {
            // A flood: subscribe and unsubscribe as fast as the socket takes them, reading nothing.
            let flood = try RawConnection(port: port)
            defer { flood.close() }
            _ = try flood.upgrade()
            var sub = 0
            while !stop.isSet, sub < 5_000 {
                sub += 1
                try flood.sendFrame(opcode: 0x1, Array(#"{"type":"subscribe","sub":\#(sub % 50 + 1),"query":"inbox","window":[0,10]}"#.utf8))
                try flood.sendFrame(opcode: 0x1, Array(#"{"type":"unsubscribe","sub":\#(sub % 50 + 1)}"#.utf8))
            }
        }
        spawn {
            // Malformed messages, one connection each: every one is closed with 1002.
            while !stop.isSet {
                let bad = try RawConnection(port: port)
                defer { bad.close() }
                _ = try bad.upgrade()
                try bad.sendFrame(opcode: 0x1, Array(#"{"type":"subscribe","sub":"one"}"#.utf8))
                closeCodes.add(try bad.closeCode())
                usleep(20_000)
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        var underAttack: [Duration] = []
        // About three seconds: the slow headers pass their deadline meanwhile.
        for _ in 0..<60 {
            underAttack.append(try await round())
            try await Task.sleep(for: .milliseconds(40))
        }
        stop.set()
        func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }
        print("HostileClientTests.soak: the steady client's time to equal the SELECT after a round of writes, median \(median(quiet)) quiet, \(median(underAttack)) under attack (max \(underAttack.max() ?? .zero)); malformed connections closed: \(closeCodes.summary)")
        #expect(closeCodes.all.allSatisfy { $0 == WireCloseCode.protocolError.rawValue }, "\(closeCodes.summary)")
        #expect(!closeCodes.all.isEmpty)
        let start = clock.now
        await fixture.stop()
        let took = start.duration(to: clock.now)
        #expect(took < .seconds(5), "shutdown took \(took) with a 2 s drain time")
        steady.remote.stop()
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
        // Socket calls that wait for the server, each on a thread of its own (see `onOwnThread`).
        let (stalled, upgrade) = try await onOwnThread {
            let stalled = try RawConnection(port: port, receiveBuffer: 4_096)
            let upgrade = try stalled.upgrade()
            try stalled.sendFrame(opcode: 0x1, Array(Self.subscribe.utf8))
            return (stalled, upgrade)
        }
        #expect(upgrade.contains("101"))
        let (silent, slowHeader) = try await onOwnThread {
            let silent = try RawConnection(port: port)
            let slowHeader = try RawConnection(port: port)
            try slowHeader.send("GET /live HTTP/1.1\r\nHost: 127")
            return (silent, slowHeader)
        }
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

/// Tells the hostile clients' threads to stop.
final class HostileStop: @unchecked Sendable {
    // `@unchecked Sendable`: `value` is read and written under `lock` only.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// The close codes the malformed clients received.
final class HostileCounts: @unchecked Sendable {
    // `@unchecked Sendable`: `codes` is read and written under `lock` only.
    private let lock = NSLock()
    private var codes: [UInt16?] = []
    func add(_ code: UInt16?) { lock.withLock { codes.append(code) } }
    var all: [UInt16?] { lock.withLock { codes } }
    var summary: String {
        let all = self.all
        return Dictionary(grouping: all.map { $0.map(String.init) ?? "none" }, by: { $0 }).map { "\($0.key): \($0.value.count)" }.sorted().joined(separator: ", ")
    }
}
