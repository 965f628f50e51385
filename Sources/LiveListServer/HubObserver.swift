import CoreMetrics
import ListDiff
import LiveQueryCore

/// The live queries whose last event was a failure they have not recovered from: what makes a
/// server not ready (``LiveListHealth/NotReady/queryFailing(query:count:)``).
final class FailingQueries: Sendable {
    private let failing = Locked([ObjectIdentifier: String]())

    /// The live query `id` (of published query `query`) failed, or (`nil`) is following.
    func set(_ id: ObjectIdentifier, failing query: String?) {
        failing.withLock { $0[id] = query }
    }

    /// The failing live queries, counted by published query.
    /// - Complexity: O(failing live queries).
    var byQuery: [String: Int] {
        failing.withLock { failing in failing.values.reduce(into: [:]) { $0[$1, default: 0] += 1 } }
    }
}

/// What one shared live query tells its server as its events pass: failures and recoveries (for
/// readiness), the time from each commit to its changeset and its refetches, and what resuming
/// clients got (for the metrics). O(1) an event.
final class HubObserver: Sendable {
    let query: String
    private let metrics: LiveListMetrics
    private let failures: FailingQueries
    private let applyTimer: CoreMetrics.Timer
    private let isFailing = Locked(false)
    /// Events the engine delivered and the hub's loop has not handled yet, and since when the
    /// oldest of them waits: a loop stuck on one (a read that never ends) leaves its subscribers
    /// behind while the engine follows, and readiness says so.
    private let backlog = Locked((waiting: 0, since: ContinuousClock.Instant?.none))

    init(query: String, metrics: LiveListMetrics, failures: FailingQueries) {
        self.query = query
        self.metrics = metrics
        self.failures = failures
        applyTimer = metrics.applyTimer(query: query)
    }

    func saw(_ event: ServedLiveQueryEvent) {
        backlog.withLock { backlog in
            if backlog.waiting == 0 { backlog.since = .now }
            backlog.waiting += 1
        }
        switch event {
        case .initial, .unchanged:
            following()
        case let .update(update, _):
            following()
            let (seconds, attoseconds) = update.latency.components
            applyTimer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
            if case let .refetch(reason) = update.path { metrics.countRefetch(reason) }
        case .failure:
            metrics.countFailure(query: query)
            let wasFailing = isFailing.withLock { failing in
                defer { failing = true }
                return failing
            }
            if !wasFailing { failures.set(ObjectIdentifier(self), failing: query) }
        }
    }

    /// The hub's loop handled an event: the next one waits from now.
    func handled() {
        backlog.withLock { backlog in
            backlog.waiting = max(0, backlog.waiting - 1)
            backlog.since = backlog.waiting == 0 ? nil : .now
        }
    }

    /// Since when the hub's loop has not handled the events waiting for it (`nil`: none waits).
    var waitingSince: ContinuousClock.Instant? { backlog.withLock { $0.since } }

    func resumed(_ outcome: LiveListMetrics.ResumeOutcome) { metrics.countResume(outcome) }

    /// The live query stopped: it fails no longer.
    func closed() {
        isFailing.withLock { $0 = false }
        failures.set(ObjectIdentifier(self), failing: nil)
    }

    private func following() {
        let wasFailing = isFailing.withLock { failing in
            defer { failing = false }
            return failing
        }
        if wasFailing { failures.set(ObjectIdentifier(self), failing: nil) }
    }
}
