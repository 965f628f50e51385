import ListDiff
import LiveQueryCore

/// A PostgreSQL live query's event with the commit position it is at: what a server needs to
/// name each result alike on every instance (``PostgresLiveQuery/positionedEvents()``).
public enum PostgresPositionedEvent<ID: LiveIdentity>: Sendable {
    /// The result when the stream began, at `position` (`nil` for a first screen: it is at no
    /// position until the whole result arrives).
    case initial(LiveResult<ID>, position: PostgresLSN?)
    /// A new result: the query's result after exactly the commits that end at or before `position`.
    case update(LiveQueryUpdate<ID>, position: PostgresLSN?)
    /// A commit that ends at `position` touched the query's tables and left its result as it was:
    /// the latest result is also the query's result at `position`.
    case unchanged(through: PostgresLSN)
    /// The query failed (see ``LiveQueryEvent/failure(_:)``).
    case failure(LiveQueryError)
}

/// Hands the positioned events of one query to each consumer of ``PostgresLiveQuery/positionedEvents()``,
/// in the order the engine made them. Its streams, latest result and whether it finished are one
/// `Locked` value.
final class PositionedChannel<ID: LiveIdentity>: Sendable {
    typealias Event = PostgresPositionedEvent<ID>

    private struct State {
        var streams: [Int: AsyncStream<Event>.Continuation] = [:]
        var next = 0
        var latest: (result: LiveResult<ID>, position: PostgresLSN?)
        var finished = false
    }

    private let state: Locked<State>

    init(initial: LiveResult<ID>, position: PostgresLSN?) {
        state = Locked(State(latest: (initial, position)))
    }

    /// A new stream that starts with `.initial(latest result, its position)`; unbounded, as a
    /// query's `events` are.
    func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        state.withLock { state in
            continuation.yield(.initial(state.latest.result, position: state.latest.position))
            guard !state.finished else {
                continuation.finish()
                return
            }
            let id = state.next
            state.next += 1
            state.streams[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.state.withLock { $0.streams.removeValue(forKey: id) }
            }
        }
        return stream
    }

    func send(_ event: Event) {
        state.withLock { state in
            guard !state.finished else { return }
            switch event {
            case let .update(update, position): state.latest = (update.result, position)
            case let .unchanged(position): state.latest.position = position
            case .initial, .failure: break
            }
            for continuation in state.streams.values { continuation.yield(event) }
        }
    }

    func finish() {
        let ending = state.withLock { state in
            state.finished = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for continuation in ending { continuation.finish() }
    }
}
