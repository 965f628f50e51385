import Foundation

/// Hands a live query's events to every consumer: the callback given to `open`, and each
/// iteration of `events` or `results()`, which starts from the current result.
///
/// `@unchecked Sendable`: its mutable state (the latest result, the subscribers, whether it is
/// finished) is only touched under `lock`; events come from the writer's queue, subscriptions from
/// anywhere.
package final class EventChannel<ID: LiveIdentity>: @unchecked Sendable {
    package typealias Event = LiveQueryEvent<ID>

    private let lock = NSLock()
    private var latest: LiveResult<ID>
    private var eventSubscribers: [Int: AsyncStream<Event>.Continuation] = [:]
    private var resultSubscribers: [Int: AsyncStream<LiveResult<ID>>.Continuation] = [:]
    private var nextSubscriber = 0
    private var finished = false
    private let callbackQueue: DispatchQueue?
    private let onEvent: (@Sendable (Event) -> Void)?
    /// Sees every event before any consumer does, on the thread that delivers it: an engine that
    /// keeps what each delivered result stands for (PostgreSQL's commit positions) records it there.
    private var tap: (@Sendable (Event) -> Void)?

    package init(initial: LiveResult<ID>, callbackQueue: DispatchQueue?, onEvent: (@Sendable (Event) -> Void)?) {
        latest = initial
        self.callbackQueue = callbackQueue
        self.onEvent = onEvent
    }

    package var latestResult: LiveResult<ID> { lock.withLock { latest } }

    package var isFinished: Bool { lock.withLock { finished } }

    /// A new stream of events starting with `.initial(current result)`; unbounded, because every
    /// changeset starts where the previous one ended and none may be dropped.
    package func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        lock.withLock {
            guard !finished else {
                continuation.yield(.initial(latest))
                continuation.finish()
                return
            }
            let id = nextSubscriber
            nextSubscriber += 1
            continuation.yield(.initial(latest))
            eventSubscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = lock.withLock { self.eventSubscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// A new stream of results starting with the current one; only the newest is kept while the
    /// consumer is busy.
    package func results() -> AsyncStream<LiveResult<ID>> {
        let (stream, continuation) = AsyncStream<LiveResult<ID>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        lock.withLock {
            continuation.yield(latest)
            guard !finished else {
                continuation.finish()
                return
            }
            let id = nextSubscriber
            nextSubscriber += 1
            resultSubscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = lock.withLock { self.resultSubscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// Hands `.initial(latest)` to the callback: once, when the query opens, before any update
    /// (it runs in the writer access that starts following the database).
    package func deliverInitialToCallback() {
        callBack(with: .initial(latestResult), evenIfFinished: false)
    }

    /// Sets the tap that sees every later event first (see `tap`).
    package func tap(_ body: @escaping @Sendable (Event) -> Void) {
        lock.withLock { tap = body }
    }

    package func deliver(_ event: Event) {
        lock.withLock { tap }?(event)
        let delivered = lock.withLock { () -> Bool in
            guard !finished else { return false }
            yieldLocked(event)
            return true
        }
        if delivered { callBack(with: event, evenIfFinished: false) }
    }

    private func yieldLocked(_ event: Event) {
        if case let .update(update) = event {
            latest = update.result
            for continuation in resultSubscribers.values { continuation.yield(update.result) }
        }
        for continuation in eventSubscribers.values { continuation.yield(event) }
    }

    private func callBack(with event: Event, evenIfFinished: Bool) {
        guard let onEvent else { return }
        guard let callbackQueue else {
            onEvent(event)
            return
        }
        callbackQueue.async { [weak self] in
            // Nothing is delivered after `cancel()`, even what was already queued.
            guard let self, evenIfFinished || !self.isFinished else { return }
            onEvent(event)
        }
    }

    /// Finishes every stream; with `event` (a terminal failure), delivers it to every consumer
    /// first. Nothing is delivered afterwards.
    package func finish(with event: Event? = nil) {
        let (events, results, wasFinished) = lock.withLock {
            () -> ([AsyncStream<Event>.Continuation], [AsyncStream<LiveResult<ID>>.Continuation], Bool) in
            let wasFinished = finished
            if let event, !wasFinished { yieldLocked(event) }
            finished = true
            defer {
                eventSubscribers = [:]
                resultSubscribers = [:]
            }
            return (Array(eventSubscribers.values), Array(resultSubscribers.values), wasFinished)
        }
        for continuation in events { continuation.finish() }
        for continuation in results { continuation.finish() }
        if let event, !wasFinished { callBack(with: event, evenIfFinished: true) }
    }
}
