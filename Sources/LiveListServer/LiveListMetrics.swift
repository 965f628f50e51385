import CoreMetrics
import Foundation
import ListDiff
import LiveQueryCore
import Prometheus

/// A server's metrics, recorded through swift-metrics into a Prometheus registry and served by
/// `GET /metrics` in Prometheus' text format (written by swift-prometheus). What each means, and
/// the alerts worth setting, is in docs/OPERATIONS.md.
///
/// Counters and histograms are recorded as things happen (lock-free increments); the gauges that
/// describe the whole server — connections, subscriptions, lag, what resume keeps — are read
/// when the registry is scraped (``LiveListServer/metricsText()``), so serving pays nothing for
/// them between scrapes.
///
/// Give several servers of one process one registry each (the default), or share an app's own
/// through ``LiveListServer/Configuration/metricsRegistry``.
public final class LiveListMetrics: Sendable {
    /// The registry the metrics are kept in.
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    let framesSent: CoreMetrics.Counter
    let bytesSent: CoreMetrics.Counter
    private let ready: CoreMetrics.Gauge
    private let connections: CoreMetrics.Gauge
    private let subscriptions: CoreMetrics.Gauge
    private let queries: CoreMetrics.Gauge
    private let failingQueries: CoreMetrics.Gauge
    private let keptChangesets: CoreMetrics.Gauge
    private let keptBytes: CoreMetrics.Gauge
    private let lagBytes: CoreMetrics.Gauge
    private let lagSeconds: CoreMetrics.Gauge
    private let commitsDecoded: CoreMetrics.Counter
    private let commitsApplied: CoreMetrics.Counter
    private let captureReconnects: CoreMetrics.Counter
    private let watchdogFirings: CoreMetrics.Counter
    private let mutationTimer: CoreMetrics.Timer
    private let mutationsWaiting: CoreMetrics.Gauge
    private let mutationLaneDeepest: CoreMetrics.Gauge
    /// The counters of a fixed set of labels, made once: no registry lookup per mutation or resume.
    private let mutationCounters: [MutationOutcome: CoreMetrics.Counter]
    private let resumeCounters: [ResumeOutcome: CoreMetrics.Counter]
    /// The engine's own totals when last scraped: its counters grow by the difference.
    private let engineTotals = Locked([String: Int]())

    /// The buckets of every duration histogram (commit to changeset, mutation to answer): 100 µs to 10 s.
    static let applyBuckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                                          .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                                          .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)]

    /// Metrics kept in `registry` (a new one by default).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.applyBuckets
        self.factory = factory
        framesSent = Counter(label: "livelist_frames_sent_total", factory: factory)
        bytesSent = Counter(label: "livelist_bytes_sent_total", factory: factory)
        ready = Gauge(label: "livelist_ready", factory: factory)
        connections = Gauge(label: "livelist_connections", factory: factory)
        subscriptions = Gauge(label: "livelist_subscriptions", factory: factory)
        queries = Gauge(label: "livelist_live_queries", factory: factory)
        failingQueries = Gauge(label: "livelist_failing_live_queries", factory: factory)
        keptChangesets = Gauge(label: "livelist_kept_changesets", factory: factory)
        keptBytes = Gauge(label: "livelist_kept_bytes", factory: factory)
        lagBytes = Gauge(label: "livelist_replication_lag_bytes", factory: factory)
        lagSeconds = Gauge(label: "livelist_replication_lag_seconds", factory: factory)
        commitsDecoded = Counter(label: "livelist_commits_decoded_total", factory: factory)
        commitsApplied = Counter(label: "livelist_commits_applied_total", factory: factory)
        captureReconnects = Counter(label: "livelist_capture_reconnects_total", factory: factory)
        watchdogFirings = Counter(label: "livelist_watchdog_firings_total", factory: factory)
        mutationTimer = Timer(label: "livelist_mutation_seconds", factory: factory)
        mutationsWaiting = Gauge(label: "livelist_mutations_waiting", factory: factory)
        mutationLaneDeepest = Gauge(label: "livelist_mutation_lane_depth_max", factory: factory)
        mutationCounters = Dictionary(uniqueKeysWithValues: MutationOutcome.allCases.map { outcome in
            (outcome, Counter(label: "livelist_mutations_total", dimensions: [("outcome", outcome.rawValue)], factory: factory))
        })
        resumeCounters = Dictionary(uniqueKeysWithValues: ResumeOutcome.allCases.map { outcome in
            (outcome, Counter(label: "livelist_resumes_total", dimensions: [("outcome", outcome.rawValue)], factory: factory))
        })
    }

    /// How a client's mutation was answered.
    enum MutationOutcome: String, CaseIterable {
        /// `mutated`: applied now.
        case applied
        /// `mutated` with `duplicate`: applied before (a resend).
        case duplicate
        /// Refused by the server or the mutation (`conflict`, `mutationFailed`, bad arguments…).
        case refused
        /// `mutationUnavailable`: not run (its lane full, the database unreachable); sent again later.
        case unavailable
        /// `mutationOutOfOrder`: a number skipped.
        case outOfOrder = "out_of_order"
    }

    /// A mutation answered `since` it arrived: counted by outcome, its time in the histogram.
    func mutationAnswered(_ outcome: MutationOutcome, since arrived: ContinuousClock.Instant) {
        mutationCounters[outcome]?.increment()
        let (seconds, attoseconds) = arrived.duration(to: .now).components
        mutationTimer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The histogram of the time from a commit to its changeset, for one published query.
    func applyTimer(query: String) -> CoreMetrics.Timer {
        Timer(label: "livelist_query_apply_seconds", dimensions: [("query", query)], factory: factory)
    }

    /// Counts a refetch, by its reason's kind.
    func countRefetch(_ reason: RefetchReason) {
        Counter(label: "livelist_refetches_total", dimensions: [("reason", Self.kind(of: reason))], factory: factory).increment()
    }

    /// A refetch's reason as a label: one of a few names, whatever the tables or shapes.
    static func kind(of reason: RefetchReason) -> String {
        switch reason {
        case .request: "request"
        case .criteriaChanged: "criteria_changed"
        case .tooManyRowsChanged: "too_many_rows_changed"
        case .undescribedChanges: "undescribed_changes"
        case .tableChanged: "table_changed"
        case .tableWithoutRowidChanged: "table_without_rowid_changed"
        case .schemaChanged: "schema_changed"
        case .anotherConnection: "another_connection"
        case .recovering: "recovering"
        }
    }

    /// Counts a failure of a live query of `query`.
    func countFailure(query: String) {
        Counter(label: "livelist_query_failures_total", dimensions: [("query", query)], factory: factory).increment()
    }

    /// What a resuming client got.
    enum ResumeOutcome: String, CaseIterable {
        /// One changeset from its version (or none: it was current).
        case resumed
        /// A reset: its version was no longer kept, or too many changes since.
        case reset
        /// `behind`: this server did not reach its version in time.
        case behind
    }

    func countResume(_ outcome: ResumeOutcome) {
        resumeCounters[outcome]?.increment()
    }

    /// Sets the gauges from `health` and the mutations waiting, and adds what the engine counted
    /// since the last scrape.
    func record(_ health: LiveListHealth, mutationDepth: (waiting: Int, deepest: Int)) {
        mutationsWaiting.record(mutationDepth.waiting)
        mutationLaneDeepest.record(mutationDepth.deepest)
        ready.record(health.isReady ? 1 : 0)
        connections.record(health.connections)
        subscriptions.record(health.subscriptions)
        queries.record(health.queries)
        failingQueries.record(health.notReady.reduce(0) { count, reason in
            if case let .queryFailing(_, failing) = reason { count + failing } else { count }
        })
        keptChangesets.record(health.keptChangesets)
        keptBytes.record(health.keptBytes)
        let capture = health.capture
        if let bytes = capture.lagBytes { lagBytes.record(Double(bytes)) }
        if let lag = capture.lag {
            let (seconds, attoseconds) = lag.components
            lagSeconds.record(Double(seconds) + Double(attoseconds / 1_000_000_000) / 1_000_000_000)
        }
        let totals: [(String, Int?, CoreMetrics.Counter)] = [
            ("decoded", capture.commitsDecoded, commitsDecoded), ("applied", capture.commitsApplied, commitsApplied),
            ("reconnects", capture.reconnects, captureReconnects), ("firings", capture.watchdogFirings, watchdogFirings),
        ]
        for (name, total, counter) in totals {
            guard let total else { continue }
            let grown = engineTotals.withLock { last -> Int in
                defer { last[name] = max(last[name] ?? 0, total) }
                return max(0, total - (last[name] ?? 0))
            }
            if grown > 0 { counter.increment(by: grown) }
        }
    }

    /// The registry in Prometheus' text format (version 0.0.4).
    func emit() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16_384)
        registry.emit(into: &buffer)
        return buffer
    }
}

