/// How a ``PostgresLiveDatabase`` keeps up with PostgreSQL, as an operator reads it: whether its
/// replication stream is streaming, how far behind the WAL it is (measured against
/// `pg_current_wal_insert_lsn()` on a normal connection, not inferred from silence), and what it
/// counted. ``PostgresLiveDatabase/replicationStatus`` gives it at once, without a round trip.
///
/// ```swift
/// import LiveQueryPostgres
///
/// func isBehind(_ database: PostgresLiveDatabase) -> Bool {
///     let status = database.replicationStatus
///     guard case .streaming = status.stream else { return true }
///     return (status.lag ?? .zero) > .seconds(5)
/// }
/// ```
public struct PostgresReplicationStatus: Sendable {
    /// Where the replication connection stands.
    public enum Stream: Sendable {
        /// Connecting for the first time.
        case connecting
        /// A session streams.
        case streaming
        /// No session since `since` (the stream connects again, less and less often up to once a
        /// second): the last one ended, or none could start, for `error`.
        case lost(since: ContinuousClock.Instant, error: PostgresLiveQueryError)
    }

    /// Where the replication connection stands.
    public var stream: Stream
    /// The WAL's end the last probe read (`nil` before the first that succeeded).
    public var walPosition: PostgresLSN?
    /// Every commit that ends at or before it came through the stream.
    public var received: PostgresLSN
    /// Every commit that ends at or before it is applied to every open query.
    public var applied: PostgresLSN
    /// The WAL not applied yet, in bytes (`nil` before the first probe).
    public var lagBytes: UInt64?
    /// How long ago the probe first saw WAL that is still not applied (zero when none is; `nil`
    /// before the first probe). While the stream is lost, at least the time since it was lost;
    /// while no probe succeeds (PostgreSQL unreachable), at least the time since the last did.
    public var lag: Duration?
    /// When the last probe succeeded (`nil` before the first).
    public var probedAt: ContinuousClock.Instant?
    /// Why the last probe failed, when it did (PostgreSQL unreachable on a normal connection).
    public var probeFailure: PostgresLiveQueryError?
    /// Commits the stream decoded since the database was opened.
    public var commitsDecoded: Int
    /// Commits applied since then: each applied to the queries it touches, or passed over when it
    /// touched none.
    public var commitsApplied: Int
    /// Times the stream's session ended (PostgreSQL restarted, the network failed, the watchdog
    /// reconnected it) and was made again.
    public var streamReconnects: Int
    /// Times the watchdog found the stream stalled behind the WAL and reconnected it.
    public var watchdogFirings: Int
}
