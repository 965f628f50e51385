import ListDiff

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
package final class StatisticsBox: Sendable {
    private let value = Locked(LiveQueryStatistics())

    package init() {}

    package var current: LiveQueryStatistics { value.withLock { $0 } }

    package func update(_ body: (inout LiveQueryStatistics) -> Void) {
        value.withLock { body(&$0) }
    }
}
