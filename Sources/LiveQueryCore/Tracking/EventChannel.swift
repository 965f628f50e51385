import Foundation
import ListDiff

/// Hands a live query's events to every consumer: the callback given to `open`, and each
/// iteration of `events` or `results()`, which starts from the current result.
///
/// Its mutable state (the latest result, the subscribers, whether it is finished) is one
/// `Locked` value; events come from the writer's queue, subscriptions from anywhere.
package final class EventChannel<ID: LiveIdentity>: Sendable {
    package typealias Event = LiveQueryEvent<ID>

    private struct State {
        var latest: LiveResult<ID>
        var eventSubscribers: [Int: AsyncStream<Event>.Continuation] = [:]
        var resultSubscribers: [Int: AsyncStream<LiveResult<ID>>.Continuation] = [:]
        var nextSubscriber = 0
        var finished = false
        /// Sees every event before any consumer does, on the thread that delivers it: an engine
        /// that keeps what each delivered result stands for (PostgreSQL's commit positions)
        /// records it there.
        var tap: (@Sendable (Event) -> Void)?

        /// Keeps an update's result as the latest and hands `event` to every subscriber.
        mutating func yield(_ event: Event) {
            if case let .update(update) = event {
                latest = update.result
                for continuation in resultSubscribers.values { continuation.yield(update.result) }
            }
            for continuation in eventSubscribers.values { continuation.yield(event) }
        }
    }

    private let state: Locked<State>
    private let callbackQueue: DispatchQueue?
    private let onEvent: (@Sendable (Event) -> Void)?

    package init(initial: LiveResult<ID>, callbackQueue: DispatchQueue?, onEvent: (@Sendable (Event) -> Void)?) {
        state = Locked(State(latest: initial))
        self.callbackQueue = callbackQueue
        self.onEvent = onEvent
    }

    package var latestResult: LiveResult<ID> { state.withLock { $0.latest } }

    package var isFinished: Bool { state.withLock { $0.finished } }

    /// A new stream of events starting with `.initial(current result)`; unbounded, because every
    /// changeset starts where the previous one ended and none may be dropped.
    package func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        state.withLock { state in
            guard !state.finished else {
                continuation.yield(.initial(state.latest))
                continuation.finish()
                return
            }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            continuation.yield(.initial(state.latest))
            state.eventSubscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.state.withLock { $0.eventSubscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// A new stream of results starting with the current one; only the newest is kept while the
    /// consumer is busy.
    package func results() -> AsyncStream<LiveResult<ID>> {
        let (stream, continuation) = AsyncStream<LiveResult<ID>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { state in
            continuation.yield(state.latest)
            guard !state.finished else {
                continuation.finish()
                return
            }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.resultSubscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.state.withLock { $0.resultSubscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// Hands `.initial(latest)` to the callback: once, when the query opens, before any update
    /// (it runs in the writer access that starts following the database).
    package func deliverInitialToCallback() {
        callBack(with: .initial(latestResult), evenIfFinished: false)
    }

    /// Sets the tap that sees every later event first (see `State.tap`).
    package func tap(_ body: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.tap = body }
    }

    package func deliver(_ event: Event) {
        state.withLock { $0.tap }?(event)
        let delivered = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.yield(event)
            return true
        }
        if delivered { callBack(with: event, evenIfFinished: false) }
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
        let (events, results, wasFinished) = state.withLock {
            state -> ([AsyncStream<Event>.Continuation], [AsyncStream<LiveResult<ID>>.Continuation], Bool) in
            let wasFinished = state.finished
            if let event, !wasFinished { state.yield(event) }
            state.finished = true
            defer {
                state.eventSubscribers = [:]
                state.resultSubscribers = [:]
            }
            return (Array(state.eventSubscribers.values), Array(state.resultSubscribers.values), wasFinished)
        }
        for continuation in events { continuation.finish() }
        for continuation in results { continuation.finish() }
        if let event, !wasFinished { callBack(with: event, evenIfFinished: true) }
    }
}
