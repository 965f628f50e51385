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
/// `@unchecked Sendable`: every stored property is read and written under `lock` only.
final class _Outbox: @unchecked Sendable {
    /// A frame and what it is for.
    struct Frame {
        /// The message's UTF-8 bytes: one buffer shared by every subscriber it goes to.
        var bytes: ByteBuffer
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

    init(byteLimit: Int) {
        self.byteLimit = byteLimit
    }

    /// Sets what is told of dropped frames.
    func setOverflowHandler(_ handler: @escaping @Sendable ([Int]) -> Void) {
        lock.withLock { onOverflow = handler }
    }

    /// Queues a frame; returns at once.
    func send(_ frame: Frame) {
        let (wake, overflowed, handler) = lock.withLock { () -> (CheckedContinuation<Void, Never>?, [Int], (@Sendable ([Int]) -> Void)?) in
            guard !isClosed, closing == nil else { return (nil, [], nil) }
            if let sub = frame.sub, awaitingReset.contains(sub) {
                guard frame.isReset else { return (nil, [], nil) }
                awaitingReset.remove(sub)
            }
            frames.append(frame)
            if !frame.isReset { queuedBytes += frame.bytes.readableBytes }
            var overflowed: [Int] = []
            if queuedBytes > byteLimit {
                let dropped = Set(frames.compactMap(\.sub))
                frames.removeAll { $0.sub != nil }
                queuedBytes = frames.reduce(0) { $0 + ($1.isReset ? 0 : $1.bytes.readableBytes) }
                awaitingReset.formUnion(dropped)
                overflowed = dropped.sorted()
            }
            let wake = waiter
            waiter = nil
            return (wake, overflowed, onOverflow)
        }
        wake?.resume()
        if !overflowed.isEmpty { handler?(overflowed) }
    }

    /// Whether frames of `sub` are being dropped until its reset.
    func isAwaitingReset(_ sub: Int) -> Bool {
        lock.withLock { awaitingReset.contains(sub) }
    }

    /// Asks the writer to close the socket with `code` after the frames already queued.
    func close(code: UInt16, reason: String) {
        let wake = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if closing == nil { closing = (code, reason) }
            let wake = waiter
            waiter = nil
            return wake
        }
        wake?.resume()
    }

    /// What the writer does next: write these frames, or close.
    enum Next {
        case write([ByteBuffer])
        case close(code: UInt16, reason: String)
        case finished
    }

    /// Waits for frames (the writer task only).
    func next() async -> Next {
        while true {
            let next = lock.withLock { () -> Next? in
                if isClosed { return .finished }
                if !frames.isEmpty {
                    let texts = frames.map(\.bytes)
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
                    if isClosed || !frames.isEmpty || closing != nil { return true }
                    waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Stops queuing: the socket is gone.
    func finish() {
        let wake = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            isClosed = true
            frames.removeAll()
            let wake = waiter
            waiter = nil
            return wake
        }
        wake?.resume()
    }
}
