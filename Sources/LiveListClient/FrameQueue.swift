import ListDiff

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
/// The waiting frames and both sides' continuations are one `Locked` value.
final class FrameQueue: Sendable {
    private struct State {
        var frames: [String] = []
        var head = 0
        var end: (any Error)??
        var consumer: CheckedContinuation<String?, any Error>?
        var producer: CheckedContinuation<Void, Never>?
    }

    private let capacity: Int
    private let state = Locked(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues a frame; waits while `capacity` frames wait already (the socket's reader only).
    func push(_ frame: String) async {
        let handed = state.withLock { state -> CheckedContinuation<String?, any Error>? in
            guard state.end == nil else { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.frames.append(frame)
            return nil
        }
        if let handed {
            handed.resume(returning: frame)
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state -> Bool in
                guard state.end == nil, state.frames.count - state.head >= capacity else { return false }
                state.producer = continuation
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    /// Ends the frames: after those queued, the consumer gets `nil`, or `error`.
    func finish(throwing error: (any Error)? = nil) {
        let (consumer, producer) = state.withLock { state -> (CheckedContinuation<String?, any Error>?, CheckedContinuation<Void, Never>?) in
            if state.end == nil { state.end = .some(error) }
            defer { state.consumer = nil; state.producer = nil }
            return (state.consumer, state.producer)
        }
        producer?.resume()
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
    }

    /// The next frame, waiting for it; `nil` at the end (the consumer only).
    func next() async throws -> String? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String?, any Error>) in
            let (answer, producer) = state.withLock { state -> (Result<String?, any Error>?, CheckedContinuation<Void, Never>?) in
                if state.head < state.frames.count {
                    let frame = state.frames[state.head]
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.frames.count {
                        state.frames.removeFirst(state.head)
                        state.head = 0
                    }
                    let producer = state.frames.count - state.head < capacity ? state.producer : nil
                    if producer != nil { state.producer = nil }
                    return (.success(frame), producer)
                }
                if let end = state.end {
                    if let error = end { return (.failure(error), nil) }
                    return (.success(nil), nil)
                }
                state.consumer = continuation
                return (nil, nil)
            }
            producer?.resume()
            if let answer { continuation.resume(with: answer) }
        }
    }
}
