import Foundation
import LiveQuery

/// Collects a live query's delivered updates for a benchmark: appended on the writer's queue
/// (the query's callback), drained by the measuring code.
///
/// `@unchecked Sendable`: `updates` is only touched under `lock`.
final class UpdateInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var updates: [LiveQueryUpdate<Int64>] = []

    func append(_ event: LiveQueryEvent<Int64>) {
        if case let .update(update) = event { lock.withLock { updates.append(update) } }
    }

    func drain() -> [LiveQueryUpdate<Int64>] { lock.withLock { defer { updates = [] }; return updates } }
}
