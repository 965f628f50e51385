import Foundation
import GRDB
import ListTesting
import LiveListClient
@testable import LiveListServer
import LiveListWire
import NIOCore
import Testing

@Suite("Slow clients", .serialized)
struct WireSlowClientTests {
    @Test("A client that stops reading is reset (slowClient) instead of queued without limit, then equals the SELECT; another client never stops")
    @MainActor
    func stalledClientIsReset() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.outboundByteLimit = 64 << 10
        let fixture = try await WireFixture.start(rows: 300, seed: 7, configuration: configuration)
        let gated = GatedTransport()
        let slow = WireClient(url: fixture.url, viewportRows: 20, window: 0..<300, transport: gated)
        // A small window (about 12 KB a commit): it keeps up even on a loaded machine, far from the 64 KB limit.
        let steady = WireClient(url: fixture.url, viewportRows: 4, window: 0..<6)
        try await eventually("first states") { try [slow, steady].allSatisfy { $0.matches(try fixture.select()) } }
        #expect(slow.remote.model.lastResetReason == .subscribed)

        gated.gate.close()
        // Each commit rewrites every row of the stalled client's window with 2 KB subjects: far more
        // than the socket buffers and the server's 64 KB limit hold after a few commits.
        for round in 0..<40 {
            try await fixture.pool.write { db in
                try db.execute(sql: "UPDATE message SET subject = ? || printf('%.2000c', 'x')", arguments: ["round \(round) é "])
            }
        }
        try await eventually("the steady client follows while the other stalls") { steady.matches(try fixture.select()) }

        gated.gate.open()
        try await eventually("the stalled client, reset") { try slow.matches(fixture.select()) && steady.matches(fixture.select()) }
        #expect(slow.remote.model.lastResetReason == .slowClient)
        #expect(steady.remote.resetsReceived == 1)
        slow.remote.stop()
        steady.remote.stop()
        await fixture.stop()
    }

    @Test("The outbox drops a stalled subscription's frames past its limit until its reset, which does not count against it")
    func outboxBounds() {
        let dropped = DroppedSubscriptions()
        let outbox = Outbox(byteLimit: 100)
        outbox.setOverflowHandler { dropped.append($0) }
        let change = String(repeating: "c", count: 40)
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))
        outbox.send(.init(message: WireMessage(string: change), sub: 2, isReset: false))
        #expect(dropped.all.isEmpty)
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))   // 120 bytes: both subscriptions' frames go
        #expect(dropped.all == [[1, 2]])
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))   // awaiting its reset: not queued
        #expect(dropped.all == [[1, 2]])
        // A reset larger than the limit is queued (it would otherwise be asked for again forever).
        outbox.send(.init(message: WireMessage(string: String(repeating: "r", count: 500)), sub: 1, isReset: true))
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))
        outbox.send(.init(message: WireMessage(string: change), sub: 2, isReset: false))   // still awaiting its reset
        #expect(dropped.all == [[1, 2]])
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))
        outbox.send(.init(message: WireMessage(string: change), sub: 1, isReset: false))   // 120 bytes of changes after the reset
        #expect(dropped.all == [[1, 2], [1]])
    }
}

extension WireSlowClientTests {
    @Test("With direct writes the channel writer is woken once per burst and again after it parks; a close waits until the frames are taken")
    func outboxDirectWrites() async throws {
        let outbox = Outbox(byteLimit: 1_000)
        let wakes = DroppedSubscriptions()
        func send(_ text: String) { outbox.send(.init(message: WireMessage(string: text), sub: 1, isReset: false)) }
        func texts(_ frames: [Outbox.Frame]) -> [String] { frames.map { String(buffer: $0.message.text) } }
        send("a")
        outbox.useDirectWrites { wakes.append([0]) }
        #expect(wakes.all.count == 1, "frames queued before are taken at once")
        send("b")
        #expect(wakes.all.count == 1, "the writer was asked already")
        #expect(texts(outbox.takeDirect()) == ["a", "b"])
        send("c")
        #expect(wakes.all.count == 2)
        outbox.parkDirect()
        send("d")
        #expect(wakes.all.count == 3, "a parked writer is asked again")
        outbox.close(code: 1000, reason: "")
        send("e")
        #expect(wakes.all.count == 3)
        // The writer task's close comes after the channel writer took and wrote the frames.
        let next = Task { await outbox.next() }
        try await Task.sleep(for: .milliseconds(20))
        #expect(texts(outbox.takeDirect()) == ["c", "d"])
        outbox.directWritten()
        let timer = Task {
            try await Task.sleep(for: .seconds(30))
            outbox.finish()
        }
        defer { timer.cancel() }
        guard case let .close(code, _) = await next.value else {
            Issue.record("the writer task did not get the close")
            return
        }
        #expect(code == 1000)
    }
}

extension WireSlowClientTests {
    /// Holds an outbox, as the channel writer in its wake does.
    final class OutboxHolder: Sendable {
        let outbox: Outbox
        init(_ outbox: Outbox) { self.outbox = outbox }
    }

    @Test("A finished outbox lets go of its channel writer: the cycle between them ends with the connection")
    func finishedOutboxReleasesItsWriter() {
        let outbox = Outbox(byteLimit: 100)
        weak var weakHolder: OutboxHolder?
        do {
            let holder = OutboxHolder(outbox)
            weakHolder = holder
            outbox.useDirectWrites { _ = holder.outbox }
        }
        #expect(weakHolder != nil)
        outbox.finish()
        #expect(weakHolder == nil)
    }
}

/// What an outbox reported dropped. `@unchecked Sendable`: `subs` is read and written under `lock` only.
final class DroppedSubscriptions: @unchecked Sendable {
    private let lock = NSLock()
    private var subs: [[Int]] = []
    func append(_ dropped: [Int]) { lock.withLock { subs.append(dropped) } }
    var all: [[Int]] { lock.withLock { subs } }
}
