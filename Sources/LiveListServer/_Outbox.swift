import Foundation
import NIOCore

/// The frames waiting for one connection's socket, bounded: when a client reads too slowly and
/// the queue passes its byte limit, the queued frames of its subscriptions are dropped, and
/// every later frame of those subscriptions too until their reset is queued — so a client never
/// receives a changeset that does not start where its last one ended, and the server never holds
/// more than the limit for it, plus one reset per subscription: a reset does not count against
/// the limit (a window's rows may outweigh it, and a reset dropped for its own size would be
/// asked for again at once, forever, while the client stalls); the changes queued after it do,
/// and when they overflow, the reset goes with them and a newer one is asked for.
///
/// Frames leave it one of two ways. With direct writes (``useDirectWrites(_:)``), the
/// connection's `_ChannelWriter` takes them on the channel's event loop, woken once per burst;
/// the writer task then only waits for the close. Otherwise the writer task takes them
/// (``next()``) and writes them through hummingbird-websocket's outbound writer.
///
/// `@unchecked Sendable`: every stored property is read and written under `lock` only.
final class _Outbox: @unchecked Sendable {
    /// A frame and what it is for.
    struct Frame {
        /// The message: one value shared by every subscriber it goes to.
        var message: _WireMessage
        /// The subscription, `nil` for a connection-wide message.
        var sub: Int?
        /// Whether the frame starts the subscription's list over (a reset).
        var isReset: Bool
    }

    private let lock = NSLock()
    private var frames: [Frame] = []
    private var queuedBytes = 0
    /// Subscriptions whose frames are dropped until their reset.
    private var awaitingReset: Set<Int> = []
    private var waiter: CheckedContinuation<Void, Never>?
    private var closing: (code: UInt16, reason: String)?
    private var isClosed = false
    let byteLimit: Int
    /// Called, outside the lock, with the subscriptions whose frames were dropped.
    private var onOverflow: (@Sendable ([Int]) -> Void)?
    /// With direct writes: asks the channel writer to take the frames (outside the lock).
    private var directWake: (@Sendable () -> Void)?
    /// With direct writes: the channel writer was asked and has not taken the frames yet.
    private var directWakePending = false

    init(byteLimit: Int) {
        self.byteLimit = byteLimit
    }

    /// Sets what is told of dropped frames.
    func setOverflowHandler(_ handler: @escaping @Sendable ([Int]) -> Void) {
        lock.withLock { onOverflow = handler }
    }

    /// Frames leave through `wake`'s channel writer from now on (``takeDirect()``); the writer
    /// task only closes. Frames already queued are taken at once.
    func useDirectWrites(_ wake: @escaping @Sendable () -> Void) {
        let wakeNow = lock.withLock { () -> Bool in
            directWake = wake
            directWakePending = !frames.isEmpty
            return directWakePending
        }
        if wakeNow { wake() }
    }

    /// What a `send` leaves to do outside the lock.
    private enum Wake {
        case none
        case waiter(CheckedContinuation<Void, Never>)
        case direct(@Sendable () -> Void)
    }

    /// Queues a frame; returns at once.
    func send(_ frame: Frame) {
        var overflowed: [Int] = []
        var handler: (@Sendable ([Int]) -> Void)?
        let wake = lock.withLock { () -> Wake in
            guard !isClosed, closing == nil else { return .none }
            if let sub = frame.sub, !awaitingReset.isEmpty, awaitingReset.contains(sub) {
                guard frame.isReset else { return .none }
                awaitingReset.remove(sub)
            }
            frames.append(frame)
            if !frame.isReset { queuedBytes += frame.message.text.readableBytes }
            if queuedBytes > byteLimit {
                let dropped = Set(frames.compactMap(\.sub))
                frames.removeAll { $0.sub != nil }
                queuedBytes = frames.reduce(0) { $0 + ($1.isReset ? 0 : $1.message.text.readableBytes) }
                awaitingReset.formUnion(dropped)
                overflowed = dropped.sorted()
                handler = onOverflow
            }
            if directWake != nil {
                // The writer task waits for the close only; the channel writer is woken once.
                return claimDirectWake().map(Wake.direct) ?? .none
            }
            guard let waiter else { return .none }
            self.waiter = nil
            return .waiter(waiter)
        }
        switch wake {
        case .none: break
        case let .waiter(waiter): waiter.resume()
        case let .direct(directWake): directWake()
        }
        if !overflowed.isEmpty { handler?(overflowed) }
    }

    /// Under the lock: the channel writer's wake when it is to be asked now (frames queued, not
    /// asked yet), noted as asked.
    private func claimDirectWake() -> (@Sendable () -> Void)? {
        guard let directWake, !directWakePending, !frames.isEmpty else { return nil }
        directWakePending = true
        return directWake
    }

    /// With direct writes, on the channel's event loop: the queued frames, taken; the next
    /// frame wakes the channel writer again.
    func takeDirect() -> [Frame] {
        lock.withLock {
            directWakePending = false
            var taken: [Frame] = []
            swap(&taken, &frames)
            queuedBytes = 0
            return taken
        }
    }

    /// With direct writes, on the channel's event loop: the channel cannot take more now; the
    /// frames stay (and count against the limit), and the next frame or close wakes the channel
    /// writer again.
    func parkDirect() {
        lock.withLock { directWakePending = false }
    }

    /// With direct writes: the frames taken were written; a close asked for may go now.
    func directWritten() {
        let wake = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            guard closing != nil, frames.isEmpty else { return nil }
            let wake = waiter
            waiter = nil
            return wake
        }
        wake?.resume()
    }

    /// Whether a close was asked for (the channel writer then drops what a stalled client
    /// cannot take, so that the close is not held up).
    var isClosing: Bool { lock.withLock { closing != nil } }

    /// Whether frames of `sub` are being dropped until its reset.
    func isAwaitingReset(_ sub: Int) -> Bool {
        lock.withLock { awaitingReset.contains(sub) }
    }

    /// Asks the writer to close the socket with `code` after the frames already queued.
    func close(code: UInt16, reason: String) {
        let (wake, direct) = lock.withLock { () -> (CheckedContinuation<Void, Never>?, (@Sendable () -> Void)?) in
            if closing == nil { closing = (code, reason) }
            if directWake != nil, !frames.isEmpty {
                // The close waits for the channel writer to take the frames.
                return (nil, claimDirectWake())
            }
            let wake = waiter
            waiter = nil
            return (wake, nil)
        }
        wake?.resume()
        direct?()
    }

    /// What the writer does next: write these frames, or close.
    enum Next {
        case write([ByteBuffer])
        case close(code: UInt16, reason: String)
        case finished
    }

    /// Under the lock: whether the writer task has something to do — the end; frames to write;
    /// a close, which with direct writes waits until the channel writer has taken every frame.
    private var writerTaskMayGo: Bool {
        if isClosed { return true }
        if directWake != nil { return closing != nil && frames.isEmpty }
        return !frames.isEmpty || closing != nil
    }

    /// Waits for frames (the writer task only); with direct writes, for the close once the
    /// channel writer has taken every frame.
    func next() async -> Next {
        while true {
            let next = lock.withLock { () -> Next? in
                guard writerTaskMayGo else { return nil }
                if isClosed { return .finished }
                if !frames.isEmpty {
                    let texts = frames.map(\.message.text)
                    frames.removeAll(keepingCapacity: true)
                    queuedBytes = 0
                    return .write(texts)
                }
                if let closing {
                    isClosed = true
                    return .close(code: closing.code, reason: closing.reason)
                }
                return nil
            }
            if let next { return next }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = lock.withLock { () -> Bool in
                    if writerTaskMayGo { return true }
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
        let wake = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            isClosed = true
            frames.removeAll()
            directWake = nil
            onOverflow = nil
            let wake = waiter
            waiter = nil
            return wake
        }
        wake?.resume()
    }
}
