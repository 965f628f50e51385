import Foundation
import Logging
import PostgresNIO

/// The runner of every live query over one PostgreSQL database: a replication stream
/// (`ReplicationStream`, libpq, on a thread of its own) that posts each commit as the server
/// decodes it, a reading connection, and rounds (`PostgresDatabaseRunner+Round.swift`). A round takes a
/// REPEATABLE READ snapshot, waits until the stream has brought every commit that snapshot may see,
/// lets each query those commits touched absorb them in commit order and re-read what they touched
/// in that snapshot: every update equals the query's result after exactly the commits it
/// includes, and its version is the end of the last one (docs/POSTGRESQL.md). A commit that
/// touches no open query is passed over without a round.
///
/// The rounds' reads run the app's filters, which can fail (a division by zero in a new row); each
/// query reads in a savepoint of its own, so a failing one leaves the others' reads as they were.
actor PostgresDatabaseRunner {
    let configuration: PostgresConnection.Configuration
    let slot: PostgresLiveDatabase.Slot
    let publication: String
    let logger: Logger
    let refetchThreshold: Int
    let timeout: Duration
    /// Open or closed; while open, who holds the turn (one round at a time) and who waits for it,
    /// and the connections it owns: the reader, which runs the queries' SQL (the catalog, the
    /// snapshot, the reads); the flusher, which commits a transaction when the WAL a round waits
    /// for is written but not flushed (a transaction still open wrote it), so that its flush takes
    /// that WAL to the stream; the lanes, which read refetched queries apart in a round's exported
    /// snapshot (`PostgresDatabaseRunner+Lane.swift`).
    var state = DatabaseRunnerState<PostgresSession, CheckedContinuation<Bool, Never>>()
    /// The lanes reading now, the queries each reads apart, and what those are told when their
    /// lane hands them back, in order: a query being read apart runs on the lane, off this actor,
    /// so nothing else touches it meanwhile.
    var lanes = LaneState<any PostgresQueryFollowing, HeldForLane>(count: PostgresDatabaseRunner.laneCount)
    nonisolated let inbox: StreamInbox
    nonisolated let stream: ReplicationStream
    nonisolated let slotName: String
    var relations = KnownRelations()
    /// The open queries, in the order they opened.
    var runners: [any PostgresQueryFollowing] = []
    /// Per table, the open queries that read it: a commit goes to these only.
    var readers: [UInt32: [any PostgresQueryFollowing]] = [:]
    /// The queries a round has work for (commits absorbed, a failure to recover from, the rest of a
    /// first fetch): a round applies these only, so its cost follows the change, not the number of
    /// open queries.
    var attention: [ObjectIdentifier: any PostgresQueryFollowing] = [:]
    /// Every commit that ends at or before `progress.applied` is applied to every following query.
    nonisolated let progress = EngineProgress()
    var log = CommitLog()
    /// The stream's sessions (a new slot after the first means commits may have been missed) and
    /// the outage under way.
    var streamState = StreamState()
    var hadSession: Bool { streamState.hadSession }
    /// The WAL's page size (`wal_block_size`) and segment size (`wal_segment_size`, in bytes).
    var walBlockSize: UInt64 = 8_192
    var walSegmentSize: UInt64 = 16 << 20
    /// Rounds that took a snapshot, flushes asked for, commits passed over without a round (for the tests).
    var snapshotsTaken = 0
    var flushesForced = 0
    var commitsPassedOver = 0
    /// Batch statements read (each for several queries that differ in their arguments).
    var batchesRead = 0
    /// Stream sessions started (the first, and each after an outage).
    var sessionsStarted = 0
    /// Statements prepared on the rounds' connection, and prepared statements let go because
    /// their tables changed shape or the server lost them (since it was opened; for the tests).
    var statementsPrepared: (prepares: Int, outdated: Int) { reader?.prepared.counted ?? (0, 0) }
    /// The reading connection, while the runner keeps one (for the tests).
    var reader: PostgresSession? { state.session(.reader) }
    /// What the counters above say, for a test's failure message.
    var diagnostics: String {
        "engine: \(snapshotsTaken) snapshots, \(flushesForced) flushes, \(commitsPassedOver) passed over, \(batchesRead) batches, "
            + "\(sessionsStarted) sessions, \(statementsPrepared.prepares) prepared (\(statementsPrepared.outdated) outdated), "
            + "applied through \(PostgresLSN(progress.applied))"
    }
    /// Whether the publication names a partitioned table's changes by the table.
    var publishesViaRoot = false
    /// Reads rows' contents, beside the rounds.
    let contents: ContentsConnection
    /// What names this database's positions (the cluster, its timeline, the database).
    nonisolated let identity = PositionIdentity()

    init(configuration: PostgresConnection.Configuration, slot: PostgresLiveDatabase.Slot, publication: String, refetchThreshold: Int,
         timeout: Duration, logger: Logger) {
        self.timeout = timeout
        self.configuration = configuration
        self.slot = slot
        self.publication = publication
        self.logger = logger
        self.refetchThreshold = refetchThreshold
        let inbox = StreamInbox()
        self.inbox = inbox
        contents = ContentsConnection(configuration: configuration, timeout: timeout, logger: logger, aborts: inbox.aborts)
        switch slot {
        case .temporary: slotName = "livelist_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        case let .persistent(name): slotName = name
        }
        stream = ReplicationStream(settings: .init(conninfo: Self.conninfo(configuration), slotName: slotName, persistent: slot != .temporary,
                                                    publication: publication),
                                    inbox: inbox, logger: logger)
    }

    // MARK: - One round at a time

    /// Takes the turn: at once when it is free, else once those that asked before had theirs
    /// (``leave()`` hands it on, first come first). Throws once the runner is shut down.
    func enter() async throws(PostgresLiveQueryError) {
        switch state.enter() {
        case .granted:
            return
        case .refused:
            throw .connectionClosed
        case .mustWait:
            let granted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                if let now = state.wait(continuation) { continuation.resume(returning: now) }
            }
            guard granted else { throw .connectionClosed }
        }
    }

    /// Lets the turn go, to the first that waits for it.
    func leave() {
        state.leave()?.resume(returning: true)
    }

    /// Checks the server, ensures the publication, starts the stream and waits for its first
    /// session: a slot that cannot be made (no REPLICATION attribute, no free slot) throws.
    func start() async throws(PostgresLiveQueryError) {
        try await enter()
        defer { leave() }
        let reader = try await connectedReader()
        let level = try await reader.text("SHOW wal_level") ?? ""
        guard level == "logical" else { throw PostgresLiveQueryError.logicalDecodingUnavailable(walLevel: level) }
        try await ensurePublication(reader)
        if let size = try await reader.text("SHOW wal_block_size").flatMap({ UInt64($0) }), size > 0 { walBlockSize = size }
        // In bytes (`SHOW` says "16MB").
        if let size = try await reader.text("SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'").flatMap({ UInt64($0) }),
           size >= walBlockSize, size % walBlockSize == 0 {
            walSegmentSize = size
        }
        guard try await reader.text("SELECT (rolreplication OR rolsuper)::text FROM pg_roles WHERE rolname = current_user") == "true" else {
            throw .replicationSlot(slotName, PostgresReplicationFailure(message: "role \(configuration.username) may not start a replication stream"))
        }
        stream.start()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !hadSession {
            takeSessionItems()
            if case let .lost(_, error) = inbox.session { throw error }
            guard ContinuousClock.now < deadline else { throw .timedOut(sql: "START_REPLICATION", after: timeout) }
            if !hadSession { await inbox.wait(timeout: .milliseconds(100)) }
        }
    }

    /// Whether a session of the stream is streaming now.
    var isStreaming: Bool {
        if case .streaming = inbox.session { return true }
        return false
    }

    /// The reading connection, opened when closed.
    func connectedReader() async throws(PostgresLiveQueryError) -> PostgresSession {
        if let reader = state.session(.reader), !reader.connection.isClosed { return reader }
        state.drop(.reader)
        let opened = try await PostgresSession.connect(configuration, id: 1, logger: logger, timeout: timeout, aborts: inbox.aborts, settings: ContentsConnection.settings)
        // Shut down meanwhile (the actor takes other calls while it waits): nothing may outlive it.
        guard state.adopt(opened, as: .reader) else {
            try? await opened.connection.close()
            throw .connectionClosed
        }
        return opened
    }

    /// Creates the publication when missing (its partitioned tables' changes named by the table,
    /// not the partition); notes whether it names them so. Instances that start together may both
    /// find it missing: the one whose CREATE loses (a duplicate: SQLSTATE 23505 or 42710) reads
    /// the winner's.
    private func ensurePublication(_ session: PostgresSession) async throws(PostgresLiveQueryError) {
        if try await readPublication(session) { return }
        do throws(PostgresLiveQueryError) {
            try await session.execute("CREATE PUBLICATION " + PostgresPlan.quoted(publication) + " FOR ALL TABLES WITH (publish_via_partition_root = true)")
            publishesViaRoot = true
        } catch {
            guard case let .server(failure, _) = error else { throw error }
            if Self.isDuplicate(error.sqlState), try await readPublication(session) { return }
            throw .publicationMissing(publication, failure)
        }
    }

    /// Whether the publication exists; when it does, notes `publishesViaRoot`.
    private func readPublication(_ session: PostgresSession) async throws(PostgresLiveQueryError) -> Bool {
        var binds = PostgresBindings()
        binds.append(publication)
        guard let row = try await session.rows("SELECT pubviaroot FROM pg_publication WHERE pubname = $1", binds).first else { return false }
        publishesViaRoot = try PostgresPlan.decode(row, as: Bool.self)
        return true
    }

    /// A CREATE that lost to a concurrent one: `unique_violation` on the catalog's index while the
    /// other transaction was in flight, or `duplicate_object` once it had committed.
    static func isDuplicate(_ sqlState: String?) -> Bool { sqlState == "23505" || sqlState == "42710" }

    // MARK: - Following the stream

    /// Takes what the stream posted and applies it: sessions that start and end, commits that
    /// touch no open query (passed over), and rounds for the others. Returns how soon to look
    /// again when something is left to do (a failed round), else `nil` (the next post wakes it).
    func pump() async -> Duration? {
        do {
            try await enter()
        } catch {
            return nil
        }
        defer { leave() }
        takeSessionItems()
        guard hadSession else { return .milliseconds(100) }
        // Without a stream no round can know it has every commit its snapshot sees.
        guard isStreaming else { return noteTrouble(nil) }
        var attempts = 0
        var rounds = 0
        while needsRound {
            rounds += 1
            // Others (an open, a catch-up) get their turn between long runs of rounds.
            if rounds > 1_000 { return .zero }
            do throws(PostgresLiveQueryError) {
                let outcome = try await round(then: nil)
                if outcome.wentThrough {
                    takeSessionItems()
                    guard outcome == .stoppedAtUnseen else {
                        attempts = 0
                        continue
                    }
                    // A commit whose record is written but that is not visible yet: let it finish
                    // (rounds in a tight loop would take the committing backend's CPU) and look again.
                    attempts += 1
                    try? await Task.sleep(for: .microseconds(attempts < 10 ? 200 * attempts : 2_000))
                    continue
                }
                attempts += 1
                // Commits that became visible out of their order: a new snapshot in a moment.
                if attempts < 100 { try? await Task.sleep(for: .milliseconds(attempts < 10 ? 1 : 10)) } else { return .milliseconds(50) }
            } catch {
                return noteTrouble(error)
            }
        }
        if let reached = inbox.quietlyReached() { progress.applied = reached.value }
        streamState.recovered()
        stream.confirm(PostgresLSN(progress.applied))
        return nil
    }

    /// Whether a round has work: a commit waiting touches an open query, or a query needs one.
    private var needsRound: Bool {
        streamState.sessions == .commitsMayBeMissed || !inbox.isEmpty || attention.values.contains { !$0.isDetached && $0.needsRound && !(lanesBusy && $0.refetches) }
    }

    /// A query the next round has work for.
    func attend(_ runner: any PostgresQueryFollowing) { attention[ObjectIdentifier(runner)] = runner }

    /// Takes the inbox's leading items that need no round: the stream's (re)starts, commits
    /// already applied, and commits that touch no open query.
    func takeSessionItems() {
        while let item = inbox.peek() {
            switch item {
            case let .started(start):
                inbox.take()
                restarted(start)
            case let .commit(commit):
                if commit.endLSN.value <= progress.applied {
                    inbox.take()
                    continue
                }
                guard streamState.sessions == .following, concerned(by: commit).isEmpty, !attention.values.contains(where: { !$0.isDetached && $0.needsRound }) else { return }
                inbox.take()
                var taken = commit
                relations.absorb(&taken)
                log.append(end: taken.endLSN.value, relations: taken.relations)
                progress.applied = taken.endLSN.value
                commitsPassedOver += 1
            }
        }
    }

    /// The stream started on a new slot: its first session, or one after which commits between
    /// the last session and it were never seen (every query then reads its result again).
    func restarted(_ start: StreamStart) {
        sessionsStarted += 1
        identity.name = start.positionsName
        if streamState.sessionStarted() { progress.applied = start.position.value }
        log.restart(at: start.position.value)
    }

    /// The open queries that read a table the commit changed, truncated or described.
    func concerned(by commit: DecodedCommit) -> [any PostgresQueryFollowing] {
        var oids = commit.relations
        for relation in commit.described { oids.insert(relation.oid) }
        var found: [ObjectIdentifier: any PostgresQueryFollowing] = [:]
        for oid in oids { for runner in readers[oid] ?? [] { found[ObjectIdentifier(runner)] = runner } }
        return Array(found.values)
    }

    /// A round failed (`error`), or the stream is lost (`nil`): how soon to try again. The queries
    /// are told once per outage (``StreamState/trouble(at:lostAt:lostConnection:)``).
    private func noteTrouble(_ error: PostgresLiveQueryError?) -> Duration? {
        var cause = error
        var lostAt: ContinuousClock.Instant?
        if cause == nil, case let .lost(at, lost) = inbox.session {
            cause = lost
            lostAt = at
        }
        let (tell, retryIn) = streamState.trouble(at: .now, lostAt: lostAt, lostConnection: cause?.isLostConnection ?? true)
        if tell {
            let told = cause ?? .connectionClosed
            logger.warning("live queries behind the database", metadata: ["error": "\(told)"])
            for runner in runners {
                deliver(.lostTrack(told, heldThrough: progress.applied), to: runner)
                attend(runner)
            }
        }
        return retryIn
    }

    func close(_ runner: any PostgresQueryFollowing) {
        runners.removeAll { $0 === runner }
        attention[ObjectIdentifier(runner)] = nil
        indexReaders()
        deliver(.finish, to: runner)
    }

    /// Tells `runner` now, or, while a lane reads it apart, once the lane hands it back.
    func deliver(_ what: HeldForLane, to runner: any PostgresQueryFollowing) {
        if case let .tell(now) = lanes.hold(what, for: ObjectIdentifier(runner)) { now.tell(runner) }
    }

    /// A lane hands `runner` back: it is told, in order, what happened while it was read apart.
    func handBack(_ runner: any PostgresQueryFollowing) {
        runner.reattach()
        for what in lanes.handBack(ObjectIdentifier(runner)) ?? [] { what.tell(runner) }
    }

    /// Runs a round at once and returns once it applied what was committed before the call: what
    /// ``PostgresLiveQuery/upToDate()`` runs. Through an outage it waits (within the engine's
    /// timeout) for the stream to come back.
    func catchUp() async throws(PostgresLiveQueryError) {
        try await enter()
        defer { leave() }
        try await awaitStreaming()
        var caughtUp = false
        for attempt in 0..<100 where !caughtUp {
            caughtUp = try await round(then: nil).wentThrough
            if !caughtUp { try? await Task.sleep(for: .milliseconds(attempt < 10 ? 1 : 10)) }
        }
        guard caughtUp else { throw .timedOut(sql: "a snapshot that sees the commits in commit order", after: .seconds(1)) }
        // Refetched queries read apart, or waiting for the lane: until they have read what was taken.
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while attention.values.contains(where: { $0.isDetached || ($0.refetches && $0.needsRound) }), ContinuousClock.now < deadline {
            if lanesBusy {
                await inbox.wait(timeout: .milliseconds(20))
            } else {
                _ = try await round(then: nil)
            }
        }
        takeSessionItems()
        stream.confirm(PostgresLSN(progress.applied))
    }

    var isClosed: Bool { state.isClosed }

    /// Stops: the queries finish, every connection closes, and whoever waits for the turn is
    /// refused (the holder, if any, finds its connection closed).
    func shutDown() async {
        let (sessions, refused) = state.close()
        // Before any wait: a round that began a lane's transaction meanwhile detaches nothing after.
        lanes.close()
        for runner in runners { deliver(.finish, to: runner) }
        runners = []
        readers = [:]
        attention = [:]
        await stream.stop()
        for session in sessions { try? await session.connection.close() }
        await contents.close()
        for waiter in refused { waiter.resume(returning: false) }
        inbox.signal()
    }

    /// libpq's connection string for the replication stream, from the configuration the other
    /// connections use: the same server, role, database and TLS mode.
    static func conninfo(_ configuration: PostgresConnection.Configuration) -> String {
        var parts: [(String, String)] = []
        if let path = configuration.unixSocketPath {
            // libpq names a socket by its directory and the port in its file name (.s.PGSQL.5432).
            let url = URL(fileURLWithPath: path)
            parts.append(("host", url.deletingLastPathComponent().path))
            if let port = url.lastPathComponent.split(separator: ".").last.flatMap({ Int($0) }) { parts.append(("port", String(port))) }
        } else {
            parts.append(("host", configuration.host ?? "localhost"))
            parts.append(("port", String(configuration.port ?? 5432)))
        }
        parts.append(("user", configuration.username))
        if let password = configuration.password { parts.append(("password", password)) }
        if let database = configuration.database { parts.append(("dbname", database)) }
        parts.append(("sslmode", configuration.tls.isEnforced ? "require" : configuration.tls.isAllowed ? "prefer" : "disable"))
        parts += [("replication", "database"), ("application_name", "livelist"), ("connect_timeout", "5"),
                  ("keepalives", "1"), ("keepalives_idle", "5"), ("keepalives_interval", "2"), ("keepalives_count", "3")]
        return parts.map { $0.0 + "='" + $0.1.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'" }
            .joined(separator: " ")
    }
}
