import Foundation
import ListDiff
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The replication stream of one `PostgresLiveDatabase`: a thread of its own that holds a
/// replication connection (libpq, `replication=database`), takes up or makes the slot, streams
/// it (`START_REPLICATION … LOGICAL`, `pgoutput` protocol 1), decodes each commit once and posts
/// it to the engine's inbox as the server sends it — no trigger, no poll. It tells the server
/// what it received (kept in the inbox: the slot may forget it, which also lets a server that
/// shuts down end the stream) and what the engine applied (``confirm(_:)``), and asks it how far
/// it decoded (``requestPosition()``). A connection that fails or goes silent is closed and made
/// again, less and less often up to once a second; with a persistent slot the next session
/// starts after the last commit received, so the engine misses nothing; with a temporary one
/// (gone with its connection) the engine's queries read their results again.
///
/// The connection, the decoder and the schedule live on the thread (its locals); what it shares
/// with the other side — stopping, the position applied, the requests, the connection (for
/// ``stop()``'s and ``reconnect()``'s cancel), who waits for the thread to end — is one `Locked`
/// value; the wake pipe's descriptors are fixed at `init`.
final class ReplicationStream: Sendable {
    struct Settings: Sendable {
        var conninfo: String
        var slotName: String
        var persistent: Bool
        var publication: String
        var statusInterval: Duration = .seconds(1)
        var deadAfter: Duration = .seconds(4)
    }

    let settings: Settings
    let inbox: StreamInbox
    private let logger: Logger
    private struct Shared {
        var stopping = false
        var applied = PostgresLSN.zero
        var positionWanted = false
        /// The watchdog found the stream stalled: the session ends and a new one starts.
        var reconnectWanted = false
        var connection: ReplicationConnection?
        var exited: [CheckedContinuation<Void, Never>] = []
        var hasExited = false
        var started = false
    }

    private let shared = Locked(Shared())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(settings: Settings, inbox: StreamInbox, logger: Logger) {
        self.settings = settings
        self.inbox = inbox
        self.logger = logger
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// Starts the thread (once).
    func start() {
        let first = shared.withLock { shared in
            defer { shared.started = true }
            return !shared.started
        }
        guard first else { return }
        inbox.whenDrained { [weak self] in self?.wake() }
        let thread = Thread { [self] in run() }
        thread.name = "livelist.replication"
        thread.start()
    }

    /// Every commit that ends at or before `position` is applied: the server may forget it.
    func confirm(_ position: PostgresLSN) {
        shared.withLock { $0.applied = max($0.applied, position) }
        wake()
    }

    /// Asks the server to say at once how far it decoded (a keepalive, then ``StreamInbox/reached(_:)``).
    func requestPosition() {
        shared.withLock { $0.positionWanted = true }
        wake()
    }

    /// Ends the session under way (its command in progress cancelled) and starts a new one: what
    /// the watchdog does to a stream that stopped bringing the WAL (`WALWatch`).
    func reconnect() {
        let connection: ReplicationConnection? = shared.withLock { shared in
            shared.reconnectWanted = true
            return shared.connection
        }
        connection?.cancel()
        wake()
    }

    /// Stops the thread and closes the connection (a temporary slot goes with it); returns once
    /// the thread is done.
    func stop() async {
        let connection: ReplicationConnection? = shared.withLock { shared in
            shared.stopping = true
            return shared.connection
        }
        connection?.cancel()
        wake()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { shared in
                if shared.hasExited || !shared.started { return true }
                shared.exited.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private var isStopping: Bool { shared.withLock { $0.stopping } }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: - The thread

    private func run() {
        var attempt = 0
        var first = true
        while !isStopping {
            do {
                try session(first: first) {
                    attempt = 0
                    first = false
                }
            } catch {
                guard !isStopping else { break }
                logger.warning("replication stream lost; connecting again", metadata: ["error": "\(error)"])
                inbox.sessionLost(error)
                let delay = min(50 * (1 << min(attempt, 5)), 1_000)
                attempt += 1
                sleep(milliseconds: delay)
            }
        }
        let waiters: [CheckedContinuation<Void, Never>] = shared.withLock { shared in
            shared.hasExited = true
            defer { shared.exited = [] }
            return shared.exited
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits on the wake pipe (a stop ends it early).
    private func sleep(milliseconds: Int) {
        var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        _ = poll(&descriptors, 1, Int32(milliseconds))
        drainWakePipe()
    }

    private func drainWakePipe() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    /// One connection's life: connect, take up the slot, stream until it fails or the stream stops.
    private func session(first: Bool, connected: () -> Void) throws(PostgresLiveQueryError) {
        let connection = try ReplicationConnection(conninfo: settings.conninfo)
        let stop = shared.withLock { shared in
            shared.connection = connection
            return shared.stopping
        }
        defer {
            shared.withLock { $0.connection = nil }
            connection.close()
        }
        guard !stop else { return }
        let name = try Self.positionsName(connection)
        let (position, isNew) = try takeSlot(connection)
        try connection.startStreaming("START_REPLICATION SLOT " + PostgresPlan.quoted(settings.slotName) + " LOGICAL 0/0 (proto_version '1', "
            + "publication_names " + Self.literal(PostgresPlan.quoted(settings.publication)) + ")")
        connected()
        inbox.sessionStarted(StreamStart(position: position, slotIsNew: isNew, positionsName: name), first: first)
        let confirmed = shared.withLock { max($0.applied, position) }
        var schedule = StreamSchedule(started: position, applied: confirmed, at: .now, interval: settings.statusInterval, deadAfter: settings.deadAfter)
        try stream(connection, &schedule)
    }

    /// Reads and writes the CopyBoth stream until it fails or the stream stops.
    private func stream(_ connection: ReplicationConnection, _ schedule: inout StreamSchedule) throws(PostgresLiveQueryError) {
        var decoder = CommitDecoder()
        var output = false
        while true {
            let paused = inbox.isFull
            let milliseconds = Self.milliseconds(until: schedule.nextDeadline())
            var events = Int16(paused ? 0 : POLLIN)
            if output { events |= Int16(POLLOUT) }
            var descriptors = [pollfd(fd: connection.socket, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, milliseconds)
            drainWakePipe()
            if isStopping { return }
            if shared.withLock({ shared in defer { shared.reconnectWanted = false }; return shared.reconnectWanted }) {
                throw .replicationStream(.init(message: "the watchdog found the stream stalled behind the WAL"))
            }
            let now = ContinuousClock.now
            if descriptors[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !paused {
                try connection.consumeInput()
                while let bytes = try connection.nextMessage() {
                    schedule.arrived(at: now)
                    try receive(bytes, &decoder, &schedule)
                }
            }
            if paused { schedule.arrived(at: now) }   // not reading: silence is ours
            if output, descriptors[0].revents & Int16(POLLOUT) != 0 { output = try connection.flush() }
            let (position, wanted) = shared.withLock { shared in
                defer { shared.positionWanted = false }
                return (shared.applied, shared.positionWanted)
            }
            schedule.confirmed(position)
            if wanted { schedule.positionWanted() }
            if schedule.isDead(at: now) {
                throw .replicationStream(.init(message: "no answer from PostgreSQL on the replication connection within \(settings.deadAfter)"))
            }
            if let update = schedule.update(at: now) {
                output = try connection.send(ReplicationMessage.statusUpdate(received: update.received, applied: update.applied, replyNow: update.replyNow))
            }
        }
    }

    private func receive(_ bytes: [UInt8], _ decoder: inout CommitDecoder, _ schedule: inout StreamSchedule) throws(PostgresLiveQueryError) {
        do {
            switch try ReplicationMessage.parse(bytes) {
            case let .data(_, _, payload):
                if let commit = try decoder.feed(try PgOutputMessage.parse(payload)) {
                    schedule.reached(commit.endLSN)
                    inbox.post(.commit(commit))
                }
            case let .keepalive(sent, replyNow):
                schedule.reached(sent)
                inbox.reached(sent)
                if replyNow { schedule.serverAsked() }
            }
        } catch {
            throw .malformedChange(error.description)
        }
    }

    /// Takes up the persistent slot (made again when PostgreSQL invalidated it), or makes the
    /// slot; its position, and whether it is new.
    private func takeSlot(_ connection: ReplicationConnection) throws(PostgresLiveQueryError) -> (PostgresLSN, Bool) {
        let name = PostgresPlan.quoted(settings.slotName)
        if settings.persistent {
            let rows = try connection.run("SELECT confirmed_flush_lsn::text, wal_status::text FROM pg_replication_slots WHERE slot_name = "
                + Self.literal(settings.slotName))
            if let row = rows.first {
                if row.count == 2, row[1] != "lost", let text = row[0], let position = PostgresLSN(text) { return (position, false) }
                // Invalidated (it held more WAL than max_slot_wal_keep_size allows): commits since were
                // lost to it; a new slot is made, and every query refetches.
                logger.warning("replication slot invalidated; making a new one", metadata: ["slot": "\(settings.slotName)"])
                _ = try slotCommand(connection, "DROP_REPLICATION_SLOT " + name)
            }
        }
        let rows = try slotCommand(connection, "CREATE_REPLICATION_SLOT " + name + (settings.persistent ? "" : " TEMPORARY")
            + " LOGICAL pgoutput NOEXPORT_SNAPSHOT")
        guard let text = rows.first?.count ?? 0 > 1 ? rows.first?[1] : nil, let position = PostgresLSN(text) else {
            throw .malformedChange("CREATE_REPLICATION_SLOT answered \(rows)")
        }
        return (position, true)
    }

    private func slotCommand(_ connection: ReplicationConnection, _ command: String) throws(PostgresLiveQueryError) -> [[String?]] {
        do {
            return try connection.run(command)
        } catch {
            if case let .replicationStream(failure) = error, failure.sqlState != nil { throw .replicationSlot(settings.slotName, failure) }
            throw error
        }
    }

    /// The name of the positions: the cluster, its timeline and the database (`IDENTIFY_SYSTEM`).
    private static func positionsName(_ connection: ReplicationConnection) throws(PostgresLiveQueryError) -> String {
        let rows = try connection.run("IDENTIFY_SYSTEM")
        let oid = try connection.run("SELECT oid::int8::text FROM pg_database WHERE datname = current_database()")
        guard let row = rows.first, row.count >= 2, let system = row[0].flatMap({ UInt64($0) }), let timeline = row[1].flatMap({ UInt32($0) }),
              let database = oid.first?.first.flatMap({ $0 }).flatMap({ Int64($0) }) else {
            throw .malformedChange("IDENTIFY_SYSTEM answered \(rows)")
        }
        return PositionIdentity.name(system: system, timeline: timeline, database: database)
    }

    /// How long poll waits for `deadline`: 1 ms to 1 s.
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let wait = ContinuousClock.now.duration(to: deadline).components
        let total: Int64 = wait.seconds * 1_000 + wait.attoseconds / 1_000_000_000_000_000
        return Int32(min(1_000, max(1, total)))
    }

    /// A SQL string literal.
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
