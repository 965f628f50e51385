/// Where the database runner stands with its replication stream, as a value: before the stream's
/// first session, following it, or on a new slot after which commits may have been missed — and
/// the outage under way, if any, with whether the queries were told of it. Events in (a session
/// started, a round about to run, trouble, a pump that went through), decisions out (tell the
/// queries, refetch every query, when to try again). No I/O: `PostgresDatabaseRunner` holds it and
/// carries the decisions out.
struct StreamState {
    /// The stream's sessions so far.
    enum Sessions: Equatable {
        /// No session yet: nothing is known of the slot's position.
        case none
        /// Following: every commit since the first session came through the stream.
        case following
        /// A new slot was made after a session: the commits between the two may be missed, so every
        /// query reads its result again in the next round.
        case commitsMayBeMissed
    }

    /// How long the queries wait, through an outage of the connection, before they are told
    /// (their lists may be stale): a restart of PostgreSQL or a brief network cut is usually over
    /// before.
    static let outageGrace: Duration = .seconds(5)

    private(set) var sessions = Sessions.none
    /// When rounds started failing (or the stream was lost) in the outage under way.
    private(set) var troubleSince: ContinuousClock.Instant?
    /// Whether the queries were told of the outage under way (once per outage).
    private(set) var outageReported = false

    /// Whether the stream had a session: its position is known.
    var hadSession: Bool { sessions != .none }

    /// A session started on a new slot; `true` when it is the first (the runner starts at its
    /// position), `false` when it follows another (commits may have been missed).
    mutating func sessionStarted() -> Bool {
        guard sessions == .none else {
            sessions = .commitsMayBeMissed
            return false
        }
        sessions = .following
        return true
    }

    /// What a round does about commits that may have been missed: every query reads its result
    /// again, and is told so unless the outage was told already.
    enum MissedCommits: Equatable {
        case tellQueries
        case outageToldAlready
    }

    /// Before a round: what to do about commits that may have been missed (`nil`: none were).
    mutating func takeMissedCommits() -> MissedCommits? {
        guard sessions == .commitsMayBeMissed else { return nil }
        sessions = .following
        return outageReported ? .outageToldAlready : .tellQueries
    }

    /// A round failed, or the stream is lost (`lostAt`, when it says when): whether to tell the
    /// queries now — at once for a failure that is not a lost connection, after ``outageGrace``
    /// for one that is; once per outage — and how soon to try again (a quarter of the outage so
    /// far, from 50 ms to a second).
    mutating func trouble(at now: ContinuousClock.Instant, lostAt: ContinuousClock.Instant?, lostConnection: Bool)
        -> (tellQueries: Bool, retryIn: Duration)
    {
        let since = troubleSince ?? now
        troubleSince = lostAt.map { min(since, $0) } ?? since
        let outage = (troubleSince ?? since).duration(to: now)
        let tell = !outageReported && (!lostConnection || outage >= Self.outageGrace)
        if tell { outageReported = true }
        return (tell, min(max(.milliseconds(50), since.duration(to: now) / 4), .seconds(1)))
    }

    /// A pump went through: the outage, if any, is over.
    mutating func recovered() {
        troubleSince = nil
        outageReported = false
    }
}
