import ListDiff

/// What the replication stream's thread hands the engine, in the order it happened: the commits,
/// how far the stream has reached, where the stream started again without the commits before (a
/// new slot), and whether a session is streaming now. The engine takes them on its own time
/// (`PostgresDatabaseRunner`); a bounded backlog makes the thread stop reading the socket until the
/// engine catches up.
///
/// A session that ends and a next one on the same (persistent) slot leave no trace in the items:
/// the new session starts after the last commit the last one brought (the thread reports what it
/// received as flushed), so the commits go on as one stream.
///
/// What the two sides share is one `Locked` value.
final class StreamInbox: Sendable {
    enum Item: Sendable {
        /// The stream (re)started on a new slot at `start.position`: the first session, or one
        /// after which commits between the last session and this one were never seen.
        case started(StreamStart)
        case commit(DecodedCommit)
    }

    /// Whether a session streams.
    enum Session: Sendable {
        case connecting
        case streaming(StreamStart)
        /// No session since `since`, the last one lost for `error`.
        case lost(since: ContinuousClock.Instant, PostgresLiveQueryError)
    }

    private struct Shared {
        var items: [Item] = []
        var head = 0
        /// Keys held by the commits waiting: the backlog's measure.
        var backlog = 0
        var reachedPosition = PostgresLSN.zero
        var state = Session.connecting
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// The waits under way, and those among them whose time was up (or whose task was
        /// cancelled) before they began to wait.
        var active: Set<Int> = []
        var woken: Set<Int> = []
        var signalled = false
        /// Commits posted by the stream and taken by the engine, and sessions lost, since the start.
        var counts = Counts()
        /// Called (on the engine's side) when the backlog went back under its limit.
        var onDrained: (@Sendable () -> Void)?
    }

    private let shared = Locked(Shared())
    /// Past this many keys waiting, the stream's thread pauses.
    let limit: Int

    init(limit: Int = 200_000) { self.limit = limit }

    // MARK: - The stream's thread

    func post(_ item: Item) {
        shared.withLock { shared in
            switch item {
            case let .started(start): shared.reachedPosition = max(shared.reachedPosition, start.position)
            case let .commit(commit):
                shared.reachedPosition = max(shared.reachedPosition, commit.endLSN)
                shared.backlog += commit.touched.values.reduce(1) { $0 + $1.count }
                shared.counts.commitsDecoded += 1
            }
            shared.items.append(item)
        }
        signal()
    }

    /// A session started: posted as an item when it is the first or follows lost commits.
    func sessionStarted(_ start: StreamStart, first: Bool) {
        if first || start.slotIsNew { post(.started(start)) }
        shared.withLock { shared in
            shared.reachedPosition = max(shared.reachedPosition, start.position)
            shared.state = .streaming(start)
        }
        signal()
    }

    /// The session ended (or none could start) for `error`: the statements under way on the
    /// engine's other connections end too (a server gone leaves them waiting otherwise).
    func sessionLost(_ error: PostgresLiveQueryError) {
        let first: Bool = shared.withLock { shared in
            if case .lost = shared.state { return false }
            shared.state = .lost(since: .now, error)
            shared.counts.sessionsLost += 1
            return true
        }
        if first { aborts.fire(error) }
        signal()
    }

    /// The statements of the engine's other connections, ended when the session is lost.
    let aborts = StatementAborts()

    /// The server has sent everything it decoded before `position`.
    func reached(_ position: PostgresLSN) {
        let moved = shared.withLock { shared in
            guard position > shared.reachedPosition else { return false }
            shared.reachedPosition = position
            return true
        }
        if moved { signal() }
    }

    /// Whether the thread should stop reading until the engine takes what waits.
    var isFull: Bool { shared.withLock { $0.backlog >= limit } }

    func whenDrained(_ body: @escaping @Sendable () -> Void) { shared.withLock { $0.onDrained = body } }

    // MARK: - The engine

    /// Whether a session streams now.
    var session: Session { shared.withLock { $0.state } }

    /// How far the stream has reached: every commit that ends at or before it is in the inbox
    /// (or was taken from it).
    var reached: PostgresLSN { shared.withLock { $0.reachedPosition } }

    /// The next item, left in place.
    func peek() -> Item? { shared.withLock { $0.head < $0.items.count ? $0.items[$0.head] : nil } }

    /// Takes the next item.
    @discardableResult
    func take() -> Item? {
        let (item, drained): (Item?, (@Sendable () -> Void)?) = shared.withLock { shared in
            guard shared.head < shared.items.count else { return (nil, nil) }
            let item = shared.items[shared.head]
            shared.head += 1
            let wasFull = shared.backlog >= limit
            if case let .commit(commit) = item {
                shared.backlog -= commit.touched.values.reduce(1) { $0 + $1.count }
                shared.counts.commitsTaken += 1
            }
            if shared.head >= 1_024, shared.head * 2 >= shared.items.count {
                shared.items.removeFirst(shared.head)
                shared.head = 0
            }
            return (item, wasFull && shared.backlog < limit ? shared.onDrained : nil)
        }
        drained?()
        return item
    }

    /// Drops the next `offset + 1` items (what waits before a new start, which the engine does not apply).
    func drop(through offset: Int) {
        for _ in 0...offset { take() }
    }

    /// What the inbox counted since the start.
    struct Counts: Sendable, Equatable {
        /// Commits the stream decoded and posted.
        var commitsDecoded = 0
        /// Commits the engine took: applied to the queries they touch, or passed over.
        var commitsTaken = 0
        /// Sessions that ended (or failed to start) and were made again.
        var sessionsLost = 0
    }

    var counted: Counts { shared.withLock { $0.counts } }

    /// Whether items wait.
    var isEmpty: Bool { shared.withLock { $0.head >= $0.items.count } }

    /// How far the stream has reached, when nothing waits to be taken: every commit that ends at
    /// or before it was taken.
    func quietlyReached() -> PostgresLSN? { shared.withLock { $0.head >= $0.items.count ? $0.reachedPosition : nil } }

    /// The item `offset` places after the next one, left in place.
    func peek(at offset: Int) -> Item? { shared.withLock { $0.head + offset < $0.items.count ? $0.items[$0.head + offset] : nil } }

    /// Returns when something is posted or reached (at once if it was since the last wait), or
    /// after `timeout`. Any number of tasks may wait (the engine's pump, a round, an open).
    func wait(timeout: Duration) async {
        let id = shared.withLock { shared in
            shared.nextWaiter += 1
            shared.active.insert(shared.nextWaiter)
            return shared.nextWaiter
        }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.wake(id)
        }
        defer {
            timer.cancel()
            shared.withLock { shared in
                shared.active.remove(id)
                shared.woken.remove(id)
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready: Bool = shared.withLock { shared in
                    if shared.signalled || shared.woken.remove(id) != nil {
                        shared.signalled = false
                        return true
                    }
                    shared.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
    }

    /// Ends one wait (its time is up, or its task was cancelled), or makes it end at once if it
    /// has not begun.
    private func wake(_ id: Int) {
        let waiter: CheckedContinuation<Void, Never>? = shared.withLock { shared in
            guard let waiting = shared.waiters.removeValue(forKey: id) else {
                if shared.active.contains(id) { shared.woken.insert(id) }
                return nil
            }
            return waiting
        }
        waiter?.resume()
    }

    /// Ends every wait, or the next one.
    func signal() {
        let ending: [CheckedContinuation<Void, Never>] = shared.withLock { shared in
            guard !shared.waiters.isEmpty else {
                shared.signalled = true
                return []
            }
            defer { shared.waiters = [:] }
            return Array(shared.waiters.values)
        }
        for waiter in ending { waiter.resume() }
    }
}

/// How a session of the replication stream began.
struct StreamStart: Sendable, Equatable {
    /// The slot's position: commits that end at or before it are not in the stream.
    var position: PostgresLSN
    /// Whether the slot was made for this session (a temporary slot, a persistent one made or
    /// made again): commits between the last session and it were never seen.
    var slotIsNew: Bool
    /// The name of the database's positions (`PositionIdentity`).
    var positionsName: String
}
