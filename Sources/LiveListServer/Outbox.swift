import Foundation
import ListDiff
import LiveListWire
import NIOCore

/// The frames waiting for one connection's socket, bounded (see ``OutboxState``, which decides
/// what is queued, dropped, taken and woken): a client that reads too slowly loses its
/// subscriptions' queued frames until their resets, so the server never holds more than the
/// limit for it, plus one reset per subscription.
///
/// Frames leave it one of two ways. With direct writes (``useDirectWrites(_:)``), the
/// connection's `ChannelWriter` takes them on the channel's event loop, woken once per burst;
/// the writer task then only waits for the close. Otherwise the writer task takes them
/// (``next()``) and writes them through hummingbird-websocket's outbound writer.
final class Outbox: Sendable {
    typealias Frame = OutboxState.Frame
    typealias Next = OutboxState.Next

    /// Everything the outbox changes, one `Locked` value.
    private struct State {
        var decisions: OutboxState
        /// The writer task, waiting for something to do.
        var waiter: CheckedContinuation<Void, Never>?
        /// Called, outside the lock, with the subscriptions whose frames were dropped.
        var onOverflow: (@Sendable ([Int]) -> Void)?
        /// With direct writes: asks the channel writer to take the frames (outside the lock).
        var directWake: (@Sendable () -> Void)?

        /// The wake the decisions asked for, taken.
        mutating func claim(_ wake: OutboxState.Wake) -> Wake {
            switch wake {
            case .none: return .none
            case .channelWriter: return directWake.map(Wake.direct) ?? .none
            case .writerTask:
                guard let waiter else { return .none }
                self.waiter = nil
                return .waiter(waiter)
            }
        }
    }

    private let state: Locked<State>

    let byteLimit: Int

    init(byteLimit: Int) {
        self.byteLimit = byteLimit
        state = Locked(State(decisions: OutboxState(byteLimit: byteLimit)))
    }

    /// Sets what is told of dropped frames.
    func setOverflowHandler(_ handler: @escaping @Sendable ([Int]) -> Void) {
        state.withLock { $0.onOverflow = handler }
    }

    /// What to do outside the lock.
    private enum Wake {
        case none
        case waiter(CheckedContinuation<Void, Never>)
        case direct(@Sendable () -> Void)
    }

    private func perform(_ wake: Wake) {
        switch wake {
        case .none: break
        case let .waiter(waiter): waiter.resume()
        case let .direct(directWake): directWake()
        }
    }

    /// Frames leave through `wake`'s channel writer from now on (``takeDirect()``); the writer
    /// task only closes. Frames already queued are taken at once.
    func useDirectWrites(_ wake: @escaping @Sendable () -> Void) {
        perform(state.withLock { state -> Wake in
            state.directWake = wake
            return state.claim(state.decisions.useChannelWriter())
        })
    }

    /// Queues a frame; returns at once.
    func send(_ frame: Frame) {
        let (wake, dropped, handler) = state.withLock { state -> (Wake, [Int], (@Sendable ([Int]) -> Void)?) in
            let (wake, dropped) = state.decisions.send(frame)
            return (state.claim(wake), dropped, dropped.isEmpty ? nil : state.onOverflow)
        }
        perform(wake)
        if let handler { handler(dropped) }
    }

    /// Queues the connection-wide frame `make` builds from the versions its `noticed`
    /// subscriptions hold once the frames queued before it are taken
    /// (``OutboxState/versions(holding:)``): read and queued under one lock, so no frame of a
    /// later commit comes between. `make` runs under the lock: it only encodes.
    func send(holding noticed: [Int: WireVersion], _ make: ([Int: WireVersion]) -> Frame) {
        let (wake, dropped, handler) = state.withLock { state -> (Wake, [Int], (@Sendable ([Int]) -> Void)?) in
            let (wake, dropped) = state.decisions.send(make(state.decisions.versions(holding: noticed)))
            return (state.claim(wake), dropped, dropped.isEmpty ? nil : state.onOverflow)
        }
        perform(wake)
        if let handler { handler(dropped) }
    }

    /// With direct writes, on the channel's event loop: the queued frames, taken; the next
    /// frame wakes the channel writer again.
    func takeDirect() -> [Frame] {
        state.withLock { $0.decisions.takeForChannelWriter() }
    }

    /// With direct writes, on the channel's event loop: the channel cannot take more now; the
    /// frames stay (and count against the limit), and the next frame or close wakes the channel
    /// writer again.
    func parkDirect() {
        state.withLock { $0.decisions.parkChannelWriter() }
    }

    /// With direct writes: the frames taken were written; a close asked for may go now.
    func directWritten() {
        perform(state.withLock { $0.claim($0.decisions.channelWriterWrote()) })
    }

    /// Whether a close was asked for (the channel writer then drops what a stalled client
    /// cannot take, so that the close is not held up).
    var isClosing: Bool { state.withLock { $0.decisions.phase != .open } }

    /// Whether frames of `sub` are being dropped until its reset.
    func isAwaitingReset(_ sub: Int) -> Bool {
        state.withLock { $0.decisions.awaitingReset.contains(sub) }
    }

    /// Asks the writer to close the socket with `code` after the frames already queued.
    func close(code: UInt16, reason: String) {
        perform(state.withLock { $0.claim($0.decisions.close(code: code, reason: reason)) })
    }

    /// Waits for frames (the writer task only); with direct writes, for the close once the
    /// channel writer has taken every frame.
    func next() async -> Next {
        while true {
            if let next = state.withLock({ $0.decisions.nextForWriterTask() }) { return next }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.decisions.writerTaskMayGo { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Stops queuing: the socket is gone.
    /// Lets go of the handlers too: the channel writer holds this outbox, and the outbox its wake.
    func finish() {
        perform(state.withLock { state -> Wake in
            state.decisions.finish()
            state.directWake = nil
            state.onOverflow = nil
            return state.claim(.writerTask)
        })
    }
}
