import Foundation

/// What a live query has done so far: how many updates each path produced and how many rows it
/// read from SQLite. A test asserts on these to check that a one-row write costs one row.
public struct LiveQueryStatistics: Sendable, Equatable {
    /// Updates computed from the rows a transaction touched.
    public var incrementalUpdates = 0
    /// Whole-result fetches after the first (each a refetch and a diff).
    public var refetches = 0
    /// Rows read from SQLite, the first fetch included.
    public var rowsRead = 0

    /// Zeroed counters.
    public init() {}
}

/// The statistics of one query, written on the writer's queue and read anywhere.
///
/// `@unchecked Sendable`: `value` is only touched under `lock`.
package final class _StatisticsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = LiveQueryStatistics()

    package init() {}

    package var current: LiveQueryStatistics { lock.withLock { value } }

    package func update(_ body: (inout LiveQueryStatistics) -> Void) {
        lock.withLock { body(&value) }
    }
}
