import Foundation
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
/// in the order the engine made them. `@unchecked Sendable`: `streams`, `latest` and `finished`
/// are only touched under `lock`.
final class PositionedChannel<ID: LiveIdentity>: @unchecked Sendable {
    typealias Event = PostgresPositionedEvent<ID>

    private let lock = NSLock()
    private var streams: [Int: AsyncStream<Event>.Continuation] = [:]
    private var next = 0
    private var latest: (result: LiveResult<ID>, position: PostgresLSN?)
    private var finished = false

    init(initial: LiveResult<ID>, position: PostgresLSN?) {
        latest = (initial, position)
    }

    /// A new stream that starts with `.initial(latest result, its position)`; unbounded, as a
    /// query's `events` are.
    func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        lock.withLock {
            continuation.yield(.initial(latest.result, position: latest.position))
            guard !finished else {
                continuation.finish()
                return
            }
            let id = next
            next += 1
            streams[id] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.lock.withLock { self.streams.removeValue(forKey: id) }
            }
        }
        return stream
    }

    func send(_ event: Event) {
        lock.withLock {
            guard !finished else { return }
            switch event {
            case let .update(update, position): latest = (update.result, position)
            case let .unchanged(position): latest.position = position
            case .initial, .failure: break
            }
            for continuation in streams.values { continuation.yield(event) }
        }
    }

    func finish() {
        let ending = lock.withLock {
            finished = true
            defer { streams = [:] }
            return Array(streams.values)
        }
        for continuation in ending { continuation.finish() }
    }
}
