import Foundation

/// The frames between a connection's socket and the list, at most `capacity` of them waiting:
/// the socket is read only as fast as the list takes frames, so a client that falls behind
/// pushes back on the server (which then resets it) instead of piling frames up in memory.
///
/// Why not a library's: `AsyncStream`'s buffering policies drop frames instead of pushing back;
/// swift-async-algorithms' `AsyncThrowingChannel` hands over one frame at a time (the socket's
/// reader would wait for every frame to be taken), and bounding it with `buffer(policy:)` puts a
/// task and a hop between the socket and the list for every frame. This is the one bounded buffer
/// with back-pressure the client needs, in one lock.
///
/// `@unchecked Sendable`: every stored property is read and written under `lock` only.
final class _FrameQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let capacity: Int
    private var frames: [String] = []
    private var head = 0
    private var end: (any Error)??
    private var consumer: CheckedContinuation<String?, any Error>?
    private var producer: CheckedContinuation<Void, Never>?

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues a frame; waits while `capacity` frames wait already (the socket's reader only).
    func push(_ frame: String) async {
        let handed = lock.withLock { () -> CheckedContinuation<String?, any Error>? in
            guard end == nil else { return nil }
            if let consumer {
                self.consumer = nil
                return consumer
            }
            frames.append(frame)
            return nil
        }
        if let handed {
            handed.resume(returning: frame)
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = lock.withLock { () -> Bool in
                guard end == nil, frames.count - head >= capacity else { return false }
                producer = continuation
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    /// Ends the frames: after those queued, the consumer gets `nil`, or `error`.
    func finish(throwing error: (any Error)? = nil) {
        let (consumer, producer) = lock.withLock { () -> (CheckedContinuation<String?, any Error>?, CheckedContinuation<Void, Never>?) in
            if end == nil { end = .some(error) }
            defer { self.consumer = nil; self.producer = nil }
            return (self.consumer, self.producer)
        }
        producer?.resume()
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
    }

    /// The next frame, waiting for it; `nil` at the end (the consumer only).
    func next() async throws -> String? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String?, any Error>) in
            let (answer, producer) = lock.withLock { () -> (Result<String?, any Error>?, CheckedContinuation<Void, Never>?) in
                if head < frames.count {
                    let frame = frames[head]
                    head += 1
                    if head > 64, head * 2 > frames.count {
                        frames.removeFirst(head)
                        head = 0
                    }
                    let producer = frames.count - head < capacity ? self.producer : nil
                    if producer != nil { self.producer = nil }
                    return (.success(frame), producer)
                }
                if let end {
                    if let error = end { return (.failure(error), nil) }
                    return (.success(nil), nil)
                }
                consumer = continuation
                return (nil, nil)
            }
            producer?.resume()
            if let answer { continuation.resume(with: answer) }
        }
    }
}
