import Foundation

/// Hands a live query's events to its callback and, once someone reads `events`, to an async
/// stream. Guarded by a lock: events come from the database queue, the stream is created anywhere.
final class EventChannel: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: AsyncStream<LiveQueryEvent>.Continuation?
    private var created: AsyncStream<LiveQueryEvent>?
    private var isFinished = false
    private let callbackQueue: DispatchQueue?
    private let onEvent: (@Sendable (LiveQueryEvent) -> Void)?

    init(callbackQueue: DispatchQueue?, onEvent: (@Sendable (LiveQueryEvent) -> Void)?) {
        self.callbackQueue = callbackQueue
        self.onEvent = onEvent
    }

    /// The stream, created on first use; later calls return the same single-consumer stream.
    func stream() -> AsyncStream<LiveQueryEvent> {
        lock.withLock {
            if let created { return created }
            let (stream, continuation) = AsyncStream<LiveQueryEvent>.makeStream(bufferingPolicy: .unbounded)
            if isFinished { continuation.finish() }
            self.continuation = continuation
            created = stream
            return stream
        }
    }

    func deliver(_ event: LiveQueryEvent) {
        lock.withLock { _ = continuation?.yield(event) }
        guard let onEvent else { return }
        if let callbackQueue { callbackQueue.async { onEvent(event) } } else { onEvent(event) }
    }

    func finish() {
        lock.withLock {
            isFinished = true
            continuation?.finish()
        }
    }
}
