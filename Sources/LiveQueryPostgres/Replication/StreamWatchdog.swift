/// Whether the replication stream keeps up with the database, measured against PostgreSQL's own
/// WAL position rather than inferred from silence: a value fed what a probe read on a normal
/// connection (the WAL's end) and how far the stream received and the engine applied, with the
/// clock; decisions out (ask the stream for its position, reconnect it). No I/O:
/// `WALWatch` carries the decisions out. Tested without a server (`StreamWatchdogTests`).
///
/// The lag is the WAL not yet applied: in bytes, the WAL's end less the applied position; in
/// seconds, how long ago the probe first saw the WAL end past the applied position at a point the
/// engine has still not applied. A stream that is up to date has neither. The stream is stalled
/// when a WAL position seen at least ``bound`` ago is received but still not applied, or not
/// received and nothing was received for ``bound``: it is reconnected, at most once per ``bound``.
struct StreamWatchdog: Sendable, Equatable {
    /// A WAL end the probe saw, and when.
    struct Sample: Sendable, Equatable {
        var position: UInt64
        var at: ContinuousClock.Instant
    }

    /// What to do after a probe.
    enum Decision: Sendable, Equatable {
        /// The stream holds everything the WAL had.
        case following
        /// The stream is behind the WAL: ask the server for its position now (an idle stream
        /// learns it is up to date at once).
        case askPosition
        /// Behind for ``bound`` with nothing received meanwhile: reconnect the stream.
        case reconnect(Stall)
    }

    /// A stall the watchdog acts on: what the WAL had, since when, and where the stream stood.
    struct Stall: Sendable, Equatable, CustomStringConvertible {
        var walPosition: UInt64
        var since: ContinuousClock.Instant
        var received: UInt64
        var applied: UInt64
        /// Whether the stream received the WAL but the engine did not apply it.
        var receivedButNotApplied: Bool { received >= walPosition && applied < walPosition }

        var description: String {
            "WAL at \(PostgresLSN(walPosition)); received \(PostgresLSN(received)), applied \(PostgresLSN(applied))"
        }
    }

    /// How long a WAL position may stay unreached before the stream counts as stalled.
    let bound: Duration
    /// WAL ends seen and not yet applied, oldest first: at most a few (one per probe while behind,
    /// same positions merged).
    private(set) var unreached: [Sample] = []
    /// The stream's received position when the oldest unreached sample was taken, or when the
    /// stream last moved: silence since then is what makes a stall.
    private var lastReceived: Sample?
    /// The newest WAL end seen.
    private(set) var walPosition: UInt64?
    private var lastFiring: ContinuousClock.Instant?
    /// Reconnections asked for.
    private(set) var firings = 0
    /// The most samples kept: with one probe a second, over an hour behind is still measured from
    /// its start (older positions are merged into the oldest).
    static let maximumSamples = 4_096

    init(bound: Duration) {
        self.bound = bound
    }

    /// A probe read the WAL's end `wal` at `now`; the stream had received through `received` and
    /// the engine applied through `applied`.
    mutating func probed(wal: UInt64, received: UInt64, applied: UInt64, at now: ContinuousClock.Instant) -> Decision {
        walPosition = max(walPosition ?? 0, wal)
        note(received: received, applied: applied, at: now)
        if wal > applied, unreached.last.map({ $0.position < wal }) ?? true {
            if unreached.count >= Self.maximumSamples { unreached.remove(at: 1) }
            unreached.append(Sample(position: wal, at: now))
        }
        guard let oldest = unreached.first else { return .following }
        // Received but not applied: the engine is stuck since the sample at the latest. Not
        // received: stuck only while nothing arrives (a long transaction decoding is not a stall).
        let stuckSince = received >= oldest.position ? oldest.at : lastReceived.map { max($0.at, oldest.at) } ?? oldest.at
        if stuckSince.duration(to: now) >= bound, lastFiring.map({ $0.duration(to: now) >= bound }) ?? true {
            lastFiring = now
            firings += 1
            return .reconnect(Stall(walPosition: oldest.position, since: oldest.at, received: received, applied: applied))
        }
        return received < (walPosition ?? 0) ? .askPosition : .following
    }

    /// The stream and the engine moved (between probes too): samples they passed go.
    mutating func note(received: UInt64, applied: UInt64, at now: ContinuousClock.Instant) {
        if lastReceived.map({ received > $0.position }) ?? true { lastReceived = Sample(position: received, at: now) }
        let reached = min(received, applied)
        unreached.removeAll { $0.position <= reached }
    }

    /// The lag at `now`, with the stream applied through `applied`: bytes of WAL not applied, and
    /// how long ago the oldest WAL end not applied was seen (zero when none is). `nil` before the
    /// first probe.
    func lag(applied: UInt64, at now: ContinuousClock.Instant) -> (bytes: UInt64, seconds: Duration)? {
        guard let walPosition else { return nil }
        let bytes = walPosition > applied ? walPosition - applied : 0
        let oldest = unreached.first { $0.position > applied }
        return (bytes, oldest.map { $0.at.duration(to: now) } ?? .zero)
    }
}
