/// When the replication stream writes a status update and when it takes its connection for dead:
/// a value fed the stream's events and the clock, tested without I/O (`ReplicationStreamTests`).
///
/// The server learns from status updates how far the engine applied the stream (the slot keeps
/// WAL from there on, and a new stream on a persistent slot starts there). Every
/// ``interval`` without another reason, an update asks the server for a keepalive at once: a
/// connection that brings nothing back within ``deadAfter`` of such a request is dead (a server
/// gone without closing its socket, a cut network), well before TCP would say so.
struct StreamSchedule: Sendable, Equatable {
    /// Between two status updates at most.
    let interval: Duration
    /// How long after a request for a keepalive the connection may stay silent.
    let deadAfter: Duration

    /// Everything before it arrived: the end of the last commit, or the position of the last keepalive.
    private(set) var received: PostgresLSN
    /// What the last status update said arrived.
    private var reportedReceived: PostgresLSN
    /// Every commit ending at or before it is applied (the engine's confirmation).
    private(set) var applied: PostgresLSN
    private var reportedApplied: PostgresLSN
    /// A keepalive is wanted now: the server asked for a reply, or the engine for the position.
    private var replyWanted = false
    private var askServer = false
    private var lastUpdate: ContinuousClock.Instant
    /// When a keepalive was asked for that has not come yet.
    private var askedAt: ContinuousClock.Instant?

    init(started: PostgresLSN, applied: PostgresLSN, at now: ContinuousClock.Instant, interval: Duration = .seconds(1),
         deadAfter: Duration = .seconds(4)) {
        self.interval = interval
        self.deadAfter = deadAfter
        received = started
        reportedReceived = started
        self.applied = applied
        reportedApplied = applied
        lastUpdate = now
    }

    /// A message arrived: whatever it is, the connection lives.
    mutating func arrived(at now: ContinuousClock.Instant) {
        askedAt = nil
    }

    /// The stream reached `position` (a commit's end, a keepalive's position).
    mutating func reached(_ position: PostgresLSN) {
        received = max(received, position)
    }

    /// The server asked for a status update at once.
    mutating func serverAsked() { replyWanted = true }

    /// The engine wants to know how far the server decoded: an update asking for a keepalive.
    mutating func positionWanted() {
        replyWanted = true
        askServer = true
    }

    /// The engine applied every commit through `position`.
    mutating func confirmed(_ position: PostgresLSN) {
        applied = max(applied, position)
    }

    /// A status update to send now, if one is due: `(received, applied, replyNow)`.
    mutating func update(at now: ContinuousClock.Instant) -> (received: PostgresLSN, applied: PostgresLSN, replyNow: Bool)? {
        let periodic = lastUpdate.duration(to: now) >= interval
        guard replyWanted || applied != reportedApplied || periodic else { return nil }
        // The periodic update asks for a keepalive: the connection's proof of life.
        let replyNow = askServer || periodic
        if replyNow, askedAt == nil { askedAt = now }
        replyWanted = false
        askServer = false
        lastUpdate = now
        reportedApplied = applied
        reportedReceived = received
        return (received, applied, replyNow)
    }

    /// Whether a keepalive asked for has not come within ``deadAfter``.
    func isDead(at now: ContinuousClock.Instant) -> Bool {
        guard let askedAt else { return false }
        return askedAt.duration(to: now) >= deadAfter
    }

    /// When the schedule next has something to do, if nothing arrives meanwhile.
    func nextDeadline() -> ContinuousClock.Instant {
        let update = lastUpdate.advanced(by: interval)
        guard let askedAt else { return update }
        return min(update, askedAt.advanced(by: deadAfter))
    }
}
