/// Where the database runner stands, as one value: open — one caller at a time holding the turn
/// (a round, an open, a catch-up), the others waiting in the order they came, the connections it
/// owns, whether its next round reads each query on its own — or closed, when it owns nothing and
/// refuses every caller. Events in: a caller asks for the turn, waits, lets it go; a connection
/// opened (kept, or closed at once when the runner closed meanwhile); a batch failed; the runner
/// closes. Actions out: whom to hand the turn to, what to close, whom to refuse. No I/O:
/// `PostgresDatabaseRunner` holds it on its actor, opens and closes the connections and resumes
/// the waiters.
struct DatabaseRunnerState<Session, Waiter> {
    /// A connection the runner owns.
    enum Connection: Hashable {
        /// Runs the queries' SQL: the catalog, the rounds' snapshots and reads.
        case reader
        /// Commits a transaction that flushes the WAL a round waits for.
        case flusher
        /// Reads refetched queries apart, in a round's exported snapshot.
        case lane(Int)
    }

    /// Who holds the turn.
    enum Turn {
        /// Nobody: the next caller takes it at once.
        case free
        /// A caller, with those that wait for it after, first come first.
        /// - Complexity: handing the turn on is O(waiters); a handful wait at most.
        case taken(waiting: [Waiter])
    }

    /// An open runner's state.
    struct Open {
        var turn = Turn.free
        var sessions: [Connection: Session] = [:]
        /// Whether the next round reads each query on its own: a batch of re-reads failed in the last.
        var batchesPaused = false
    }

    enum Life {
        case open(Open)
        /// Shut down: no connection, no turn, no waiter.
        case closed
    }

    /// What a caller that asks for the turn is told.
    enum Entry: Equatable {
        /// It holds the turn now.
        case granted
        /// Another holds it: the caller waits (``wait(_:)``).
        case mustWait
        /// The runner is closed.
        case refused
    }

    private(set) var life = Life.open(Open())

    var isClosed: Bool {
        if case .closed = life { return true }
        return false
    }

    /// A caller asks for the turn.
    mutating func enter() -> Entry {
        guard case var .open(open) = life else { return .refused }
        guard case .free = open.turn else { return .mustWait }
        open.turn = .taken(waiting: [])
        life = .open(open)
        return .granted
    }

    /// A caller told to wait (``Entry/mustWait``) queues `waiter`: `nil` when it is queued (a later
    /// ``leave()`` hands it the turn, or ``close()`` refuses it), else what it is told at once —
    /// `true`, the turn (it was let go meanwhile), `false`, refused (the runner closed).
    mutating func wait(_ waiter: Waiter) -> Bool? {
        guard case var .open(open) = life else { return false }
        guard case let .taken(waiting) = open.turn else {
            open.turn = .taken(waiting: [])
            life = .open(open)
            return true
        }
        open.turn = .taken(waiting: waiting + [waiter])
        life = .open(open)
        return nil
    }

    /// The holder lets the turn go: the first waiter, which now holds it (to resume), or `nil` when
    /// nobody waits (the turn is free).
    mutating func leave() -> Waiter? {
        guard case var .open(open) = life, case var .taken(waiting) = open.turn else { return nil }
        let next = waiting.isEmpty ? nil : waiting.removeFirst()
        open.turn = next == nil ? .free : .taken(waiting: waiting)
        life = .open(open)
        return next
    }

    /// The connection the runner keeps as `connection`, if any.
    func session(_ connection: Connection) -> Session? {
        guard case let .open(open) = life else { return nil }
        return open.sessions[connection]
    }

    /// Keeps `session`, just opened, as `connection`: `false` when the runner closed meanwhile
    /// (nothing may outlive it: the caller closes the session).
    mutating func adopt(_ session: Session, as connection: Connection) -> Bool {
        guard case var .open(open) = life else { return false }
        open.sessions[connection] = session
        life = .open(open)
        return true
    }

    /// Forgets `connection` (it was closed).
    mutating func drop(_ connection: Connection) {
        guard case var .open(open) = life else { return }
        open.sessions[connection] = nil
        life = .open(open)
    }

    /// Whether this round may read queries in batches: not the one after a batch failed.
    mutating func roundMayBatch() -> Bool {
        guard case var .open(open) = life else { return true }
        guard open.batchesPaused else { return true }
        open.batchesPaused = false
        life = .open(open)
        return false
    }

    /// A batch of re-reads failed: the next round reads each query on its own.
    mutating func batchFailed() {
        guard case var .open(open) = life else { return }
        open.batchesPaused = true
        life = .open(open)
    }

    /// The runner shuts down: the connections to close and the waiters to refuse (in the order
    /// they came). The holder of the turn, if any, goes on; its ``leave()`` does nothing.
    mutating func close() -> (sessions: [Session], refused: [Waiter]) {
        guard case let .open(open) = life else { return ([], []) }
        life = .closed
        let refused: [Waiter]
        if case let .taken(waiting) = open.turn { refused = waiting } else { refused = [] }
        return (Array(open.sessions.values), refused)
    }
}
