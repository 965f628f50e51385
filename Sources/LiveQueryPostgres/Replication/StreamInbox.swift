import Foundation

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
/// `@unchecked Sendable`: every stored property is only touched under `lock`.
final class StreamInbox: @unchecked Sendable {
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

    private let lock = NSLock()
    private var items: [Item] = []
    private var head = 0
    /// Keys held by the commits waiting: the backlog's measure.
    private var backlog = 0
    private var reachedPosition = PostgresLSN.zero
    private var state = Session.connecting
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0
    /// The waits under way, and those among them whose time was up (or whose task was
    /// cancelled) before they began to wait.
    private var active: Set<Int> = []
    private var woken: Set<Int> = []
    private var signalled = false
    /// Commits posted by the stream and taken by the engine, and sessions lost, since the start.
    private var counts = Counts()
    /// Called (on the engine's side) when the backlog went back under its limit.
    private var onDrained: (@Sendable () -> Void)?
    /// Past this many keys waiting, the stream's thread pauses.
    let limit: Int

    init(limit: Int = 200_000) { self.limit = limit }

    // MARK: - The stream's thread

    func post(_ item: Item) {
        lock.withLock {
            switch item {
            case let .started(start): reachedPosition = max(reachedPosition, start.position)
            case let .commit(commit):
                reachedPosition = max(reachedPosition, commit.endLSN)
                backlog += commit.touched.values.reduce(1) { $0 + $1.count }
                counts.commitsDecoded += 1
            }
            items.append(item)
        }
        signal()
    }

    /// A session started: posted as an item when it is the first or follows lost commits.
    func sessionStarted(_ start: StreamStart, first: Bool) {
        if first || start.slotIsNew { post(.started(start)) }
        lock.withLock {
            reachedPosition = max(reachedPosition, start.position)
            state = .streaming(start)
        }
        signal()
    }

    /// The session ended (or none could start) for `error`: the statements under way on the
    /// engine's other connections end too (a server gone leaves them waiting otherwise).
    func sessionLost(_ error: PostgresLiveQueryError) {
        let first: Bool = lock.withLock {
            if case .lost = state { return false }
            state = .lost(since: .now, error)
            counts.sessionsLost += 1
            return true
        }
        if first { aborts.fire(error) }
        signal()
    }

    /// The statements of the engine's other connections, ended when the session is lost.
    let aborts = StatementAborts()

    /// The server has sent everything it decoded before `position`.
    func reached(_ position: PostgresLSN) {
        let moved = lock.withLock {
            guard position > reachedPosition else { return false }
            reachedPosition = position
            return true
        }
        if moved { signal() }
    }

    /// Whether the thread should stop reading until the engine takes what waits.
    var isFull: Bool { lock.withLock { backlog >= limit } }

    func whenDrained(_ body: @escaping @Sendable () -> Void) { lock.withLock { onDrained = body } }

    // MARK: - The engine

    /// Whether a session streams now.
    var session: Session { lock.withLock { state } }

    /// How far the stream has reached: every commit that ends at or before it is in the inbox
    /// (or was taken from it).
    var reached: PostgresLSN { lock.withLock { reachedPosition } }

    /// The next item, left in place.
    func peek() -> Item? { lock.withLock { head < items.count ? items[head] : nil } }

    /// Takes the next item.
    @discardableResult
    func take() -> Item? {
        let (item, drained): (Item?, (@Sendable () -> Void)?) = lock.withLock {
            guard head < items.count else { return (nil, nil) }
            let item = items[head]
            head += 1
            let wasFull = backlog >= limit
            if case let .commit(commit) = item {
                backlog -= commit.touched.values.reduce(1) { $0 + $1.count }
                counts.commitsTaken += 1
            }
            if head >= 1_024, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return (item, wasFull && backlog < limit ? onDrained : nil)
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

    var counted: Counts { lock.withLock { counts } }

    /// Whether items wait.
    var isEmpty: Bool { lock.withLock { head >= items.count } }

    /// How far the stream has reached, when nothing waits to be taken: every commit that ends at
    /// or before it was taken.
    func quietlyReached() -> PostgresLSN? { lock.withLock { head >= items.count ? reachedPosition : nil } }

    /// The item `offset` places after the next one, left in place.
    func peek(at offset: Int) -> Item? { lock.withLock { head + offset < items.count ? items[head + offset] : nil } }

    /// Returns when something is posted or reached (at once if it was since the last wait), or
    /// after `timeout`. Any number of tasks may wait (the engine's pump, a round, an open).
    func wait(timeout: Duration) async {
        let id = lock.withLock {
            nextWaiter += 1
            active.insert(nextWaiter)
            return nextWaiter
        }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.wake(id)
        }
        defer {
            timer.cancel()
            lock.withLock {
                active.remove(id)
                woken.remove(id)
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready: Bool = lock.withLock {
                    if signalled || woken.remove(id) != nil {
                        signalled = false
                        return true
                    }
                    waiters[id] = continuation
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
        let waiter: CheckedContinuation<Void, Never>? = lock.withLock {
            guard let waiting = waiters.removeValue(forKey: id) else {
                if active.contains(id) { woken.insert(id) }
                return nil
            }
            return waiting
        }
        waiter?.resume()
    }

    /// Ends every wait, or the next one.
    func signal() {
        let ending: [CheckedContinuation<Void, Never>] = lock.withLock {
            guard !waiters.isEmpty else {
                signalled = true
                return []
            }
            defer { waiters = [:] }
            return Array(waiters.values)
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
