import Foundation
import ListDiff
import LiveQuery

/// Collects a live query's delivered updates for a benchmark: appended on the writer's queue
/// (the query's callback), drained by the measuring code.
final class UpdateInbox: Sendable {
    private let updates = Locked<[LiveQueryUpdate<Int64>]>([])

    func append(_ event: LiveQueryEvent<Int64>) {
        if case let .update(update) = event { updates.withLock { $0.append(update) } }
    }

    func drain() -> [LiveQueryUpdate<Int64>] { updates.withLock { updates in defer { updates = [] }; return updates } }
}
