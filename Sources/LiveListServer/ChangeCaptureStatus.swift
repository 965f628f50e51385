/// How an engine's change capture keeps up with its database: what a server's readiness and
/// metrics report (``LiveQueryEngine/changeCapture()``). PostgreSQL's engine reports its
/// replication stream and its lag behind the WAL; SQLite's follows its database in process and
/// reports no lag.
public struct ChangeCaptureStatus: Sendable {
    /// Whether changes are coming in.
    public enum State: Sendable, Equatable {
        /// Changes come in as they are committed.
        case following
        /// Not started yet (the first connection is being made).
        case starting
        /// No changes come in since `since`: the connection to the database is lost, for `reason`.
        case lost(since: ContinuousClock.Instant, reason: String)
    }

    /// Whether changes are coming in.
    public var state: State
    /// Committed changes not applied yet, in bytes of the database's log (`nil`: not measured).
    public var lagBytes: UInt64?
    /// How long the oldest change not applied yet has waited (`nil`: not measured).
    public var lag: Duration?
    /// Commits the engine decoded, and applied, since it started (`nil`: not counted).
    public var commitsDecoded: Int?
    public var commitsApplied: Int?
    /// Times the capture's connection was lost and made again (`nil`: not counted).
    public var reconnects: Int?
    /// Times a watchdog found the capture stalled and restarted it (`nil`: none watches).
    public var watchdogFirings: Int?

    /// A status; unmeasured values `nil`.
    public init(state: State, lagBytes: UInt64? = nil, lag: Duration? = nil, commitsDecoded: Int? = nil, commitsApplied: Int? = nil,
                reconnects: Int? = nil, watchdogFirings: Int? = nil) {
        self.state = state
        self.lagBytes = lagBytes
        self.lag = lag
        self.commitsDecoded = commitsDecoded
        self.commitsApplied = commitsApplied
        self.reconnects = reconnects
        self.watchdogFirings = watchdogFirings
    }

    /// Following, with nothing measured: an engine that captures changes in process.
    public static let following = ChangeCaptureStatus(state: .following)
}
