import NIOCore
import Testing
@testable import LiveListServer

/// The outbox's decisions as a value, without a lock, a task or a socket.
@Suite("Outbox state")
struct OutboxStateTests {
    static func frame(_ text: String, sub: Int? = 1, reset: Bool = false) -> OutboxState.Frame {
        OutboxState.Frame(message: WireMessage(string: text), sub: sub, isReset: reset)
    }

    static func texts(_ next: OutboxState.Next?) -> [String]? {
        guard case let .write(buffers)? = next else { return nil }
        return buffers.map { String(buffer: $0) }
    }

    @Test("the writer task writes what is queued, then the close after it, then finishes; nothing is queued once a close is asked")
    func writerTaskOrder() {
        var state = OutboxState(byteLimit: 1_000)
        #expect(!state.writerTaskMayGo)
        #expect(state.nextForWriterTask() == nil)
        #expect(state.send(Self.frame("a")).wake == .writerTask)
        #expect(state.send(Self.frame("b", sub: nil)).wake == .writerTask)
        #expect(state.close(code: 1001, reason: "going away") == .writerTask)
        #expect(state.close(code: 1011, reason: "later") == .writerTask)
        #expect(state.send(Self.frame("c")).wake == .none)
        #expect(Self.texts(state.nextForWriterTask()) == ["a", "b"])
        #expect(state.nextForWriterTask() == .close(code: 1001, reason: "going away"))
        #expect(state.nextForWriterTask() == .finished)
    }

    @Test("with the channel writer: woken once per burst and again after it takes or parks; the close waits until it has taken every frame")
    func channelWriterWakes() {
        var state = OutboxState(byteLimit: 1_000)
        _ = state.send(Self.frame("a"))
        #expect(state.useChannelWriter() == .channelWriter)
        #expect(state.send(Self.frame("b")).wake == .none)
        #expect(!state.writerTaskMayGo, "the writer task only closes")
        #expect(state.takeForChannelWriter().count == 2)
        #expect(state.send(Self.frame("c")).wake == .channelWriter)
        state.parkChannelWriter()
        #expect(state.close(code: 1000, reason: "") == .channelWriter, "a parked writer is woken by the close")
        #expect(!state.writerTaskMayGo && state.channelWriterWrote() == .none, "frames are still queued")
        #expect(state.takeForChannelWriter().count == 1)
        #expect(state.channelWriterWrote() == .writerTask)
        #expect(state.nextForWriterTask() == .close(code: 1000, reason: ""))
    }

    @Test("overflow drops every subscription's queued frames, keeps connection-wide ones, and holds a subscription's changes until its reset")
    func overflow() {
        var state = OutboxState(byteLimit: 100)
        _ = state.send(Self.frame(String(repeating: "x", count: 40), sub: nil))
        _ = state.send(Self.frame(String(repeating: "a", count: 40), sub: 1))
        let (_, dropped) = state.send(Self.frame(String(repeating: "b", count: 40), sub: 2))
        #expect(dropped == [1, 2])
        #expect(state.frames.count == 1 && state.queuedBytes == 40)
        #expect(state.send(Self.frame("late", sub: 2)).wake == .none)
        #expect(state.frames.count == 1)
        _ = state.send(Self.frame(String(repeating: "r", count: 500), sub: 2, reset: true))
        #expect(state.queuedBytes == 40, "a reset does not count against the limit")
        #expect(!state.awaitingReset.contains(2) && state.awaitingReset.contains(1))
    }

    @Test("a socket gone ends the writer task and drops what is queued, whatever the route")
    func finish() {
        var state = OutboxState(byteLimit: 1_000)
        _ = state.useChannelWriter()
        _ = state.send(Self.frame("a"))
        state.finish()
        #expect(state.frames.isEmpty && state.writerTaskMayGo)
        #expect(state.nextForWriterTask() == .finished)
        #expect(state.send(Self.frame("b")).wake == .none)
    }
}
