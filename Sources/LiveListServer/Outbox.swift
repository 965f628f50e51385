import Foundation
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
///
/// `@unchecked Sendable`: every stored property is read and written under `lock` only.
final class Outbox: @unchecked Sendable {
    typealias Frame = OutboxState.Frame
    typealias Next = OutboxState.Next

    private let lock = NSLock()
    private var state: OutboxState
    /// The writer task, waiting for something to do.
    private var waiter: CheckedContinuation<Void, Never>?
    /// Called, outside the lock, with the subscriptions whose frames were dropped.
    private var onOverflow: (@Sendable ([Int]) -> Void)?
    /// With direct writes: asks the channel writer to take the frames (outside the lock).
    private var directWake: (@Sendable () -> Void)?

    let byteLimit: Int

    init(byteLimit: Int) {
        self.byteLimit = byteLimit
        state = OutboxState(byteLimit: byteLimit)
    }

    /// Sets what is told of dropped frames.
    func setOverflowHandler(_ handler: @escaping @Sendable ([Int]) -> Void) {
        lock.withLock { onOverflow = handler }
    }

    /// What to do outside the lock.
    private enum Wake {
        case none
        case waiter(CheckedContinuation<Void, Never>)
        case direct(@Sendable () -> Void)
    }

    /// Under the lock: the wake the state asked for, taken.
    private func claim(_ wake: OutboxState.Wake) -> Wake {
        switch wake {
        case .none: return .none
        case .channelWriter: return directWake.map(Wake.direct) ?? .none
        case .writerTask:
            guard let waiter else { return .none }
            self.waiter = nil
            return .waiter(waiter)
        }
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
        perform(lock.withLock { () -> Wake in
            directWake = wake
            return claim(state.useChannelWriter())
        })
    }

    /// Queues a frame; returns at once.
    func send(_ frame: Frame) {
        let (wake, dropped, handler) = lock.withLock { () -> (Wake, [Int], (@Sendable ([Int]) -> Void)?) in
            let (wake, dropped) = state.send(frame)
            return (claim(wake), dropped, dropped.isEmpty ? nil : onOverflow)
        }
        perform(wake)
        if let handler { handler(dropped) }
    }

    /// Queues the connection-wide frame `make` builds from the versions its `noticed`
    /// subscriptions hold once the frames queued before it are taken
    /// (``OutboxState/versions(holding:)``): read and queued under one lock, so no frame of a
    /// later commit comes between. `make` runs under the lock: it only encodes.
    func send(holding noticed: [Int: WireVersion], _ make: ([Int: WireVersion]) -> Frame) {
        let (wake, dropped, handler) = lock.withLock { () -> (Wake, [Int], (@Sendable ([Int]) -> Void)?) in
            let (wake, dropped) = state.send(make(state.versions(holding: noticed)))
            return (claim(wake), dropped, dropped.isEmpty ? nil : onOverflow)
        }
        perform(wake)
        if let handler { handler(dropped) }
    }

    /// With direct writes, on the channel's event loop: the queued frames, taken; the next
    /// frame wakes the channel writer again.
    func takeDirect() -> [Frame] {
        lock.withLock { state.takeForChannelWriter() }
    }

    /// With direct writes, on the channel's event loop: the channel cannot take more now; the
    /// frames stay (and count against the limit), and the next frame or close wakes the channel
    /// writer again.
    func parkDirect() {
        lock.withLock { state.parkChannelWriter() }
    }

    /// With direct writes: the frames taken were written; a close asked for may go now.
    func directWritten() {
        perform(lock.withLock { claim(state.channelWriterWrote()) })
    }

    /// Whether a close was asked for (the channel writer then drops what a stalled client
    /// cannot take, so that the close is not held up).
    var isClosing: Bool { lock.withLock { state.phase != .open } }

    /// Whether frames of `sub` are being dropped until its reset.
    func isAwaitingReset(_ sub: Int) -> Bool {
        lock.withLock { state.awaitingReset.contains(sub) }
    }

    /// Asks the writer to close the socket with `code` after the frames already queued.
    func close(code: UInt16, reason: String) {
        perform(lock.withLock { claim(state.close(code: code, reason: reason)) })
    }

    /// Waits for frames (the writer task only); with direct writes, for the close once the
    /// channel writer has taken every frame.
    func next() async -> Next {
        while true {
            if let next = lock.withLock({ state.nextForWriterTask() }) { return next }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = lock.withLock { () -> Bool in
                    if state.writerTaskMayGo { return true }
                    waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Stops queuing: the socket is gone.
    /// Lets go of the handlers too: the channel writer holds this outbox, and the outbox its wake.
    func finish() {
        perform(lock.withLock { () -> Wake in
            state.finish()
            directWake = nil
            onOverflow = nil
            return claim(.writerTask)
        })
    }
}
