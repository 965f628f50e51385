import ListDiff
import Logging
import PostgresNIO

/// Watches the replication stream against PostgreSQL's WAL, on a connection of its own: once a
/// ``interval`` it reads where the WAL ends (`pg_current_wal_insert_lsn()`), feeds the
/// ``StreamWatchdog`` with it and with how far the stream received and the engine applied, and
/// carries the watchdog's decisions out — asks the stream for its position, forces WAL that an
/// open transaction wrote to be flushed (so the stream can reach it), reconnects a stalled stream
/// and says so in the log. What it measured is ``status`` at once, for health checks and metrics.
actor WALWatch {
    let configuration: PostgresConnection.Configuration
    let logger: Logger
    let interval: Duration
    private let inbox: StreamInbox
    private let stream: ReplicationStream
    private let progress: EngineProgress
    private let pageSize: UInt64
    private let segmentSize: UInt64
    private var session: PostgresSession?
    private var closed = false
    /// What the last probe measured: read from any thread.
    private let measured: Locked<Measured>
    /// The position a flush was last forced for: one per WAL position left behind.
    private var flushedFor: UInt64?

    struct Measured: Sendable {
        var watchdog: StreamWatchdog
        var probedAt: ContinuousClock.Instant?
        var failure: PostgresLiveQueryError?
    }

    init(configuration: PostgresConnection.Configuration, bound: Duration, interval: Duration = .seconds(1), pageSize: UInt64, segmentSize: UInt64,
         inbox: StreamInbox, stream: ReplicationStream, progress: EngineProgress, logger: Logger) {
        self.configuration = configuration
        self.interval = interval
        self.pageSize = pageSize
        self.segmentSize = segmentSize
        self.inbox = inbox
        self.stream = stream
        self.progress = progress
        self.logger = logger
        measured = Locked(Measured(watchdog: StreamWatchdog(bound: bound)))
    }

    /// Probes once a ``interval`` until the task is cancelled or the watch closed.
    func run() async {
        while !Task.isCancelled, !closed {
            await probe()
            try? await Task.sleep(for: interval)
        }
    }

    /// Reads the WAL's end and acts on what the watchdog decides.
    func probe() async {
        let wal: PostgresLSN
        do throws(PostgresLiveQueryError) {
            let session = try await connected()
            guard let text = try await session.text("SELECT pg_current_wal_insert_lsn()::text"), let insert = PostgresLSN(text) else {
                throw PostgresLiveQueryError.malformedChange("pg_current_wal_insert_lsn()")
            }
            wal = PostgresDatabaseRunner.lastRecordEnd(insert: insert, pageSize: pageSize, segmentSize: segmentSize)
        } catch {
            if let session, session.connection.isClosed { self.session = nil }
            measured.withLock { $0.failure = error }
            return
        }
        let now = ContinuousClock.now
        let (received, applied) = (inbox.reached.value, progress.applied)
        let decision = measured.withLock { measured in
            measured.probedAt = now
            measured.failure = nil
            return measured.watchdog.probed(wal: wal.value, received: received, applied: applied, at: now)
        }
        switch decision {
        case .following:
            flushedFor = nil
        case .askPosition:
            stream.requestPosition()
            // WAL an open transaction wrote and nobody flushed yet cannot reach the stream: a
            // commit flushes it (once per position left behind a probe).
            if received < wal.value, let oldest = measured.withLock({ $0.watchdog.unreached.first }), oldest.at < now,
               flushedFor != oldest.position {
                flushedFor = oldest.position
                await flush()
            }
        case let .reconnect(stall):
            logger.warning("replication stream stalled behind the WAL; reconnecting it", metadata: [
                "wal": "\(PostgresLSN(stall.walPosition))", "received": "\(PostgresLSN(stall.received))",
                "applied": "\(PostgresLSN(stall.applied))", "behindFor": "\(stall.since.duration(to: now))",
            ])
            stream.reconnect()
            // The engine's statements under way end too: a round stuck on a dead connection
            // starts again on a new one.
            if stall.receivedButNotApplied {
                inbox.aborts.fire(.replicationStream(.init(message: "the watchdog found the engine stalled: \(stall)")))
            }
        }
    }

    /// Commits a transaction that flushes the WAL at once (`PostgresDatabaseRunner.flushingStatement`).
    private func flush() async {
        do throws(PostgresLiveQueryError) {
            let session = try await connected()
            try await session.execute("BEGIN READ WRITE")
            try await session.execute(PostgresDatabaseRunner.flushingStatement)
            try await session.execute("COMMIT")
        } catch {
            logger.debug("the watch could not flush the WAL", metadata: ["error": "\(error)"])
        }
    }

    private func connected() async throws(PostgresLiveQueryError) -> PostgresSession {
        if let session, !session.connection.isClosed { return session }
        session = nil
        let opened = try await PostgresSession.connect(configuration, id: 6, logger: logger, timeout: .seconds(5),
                                                        settings: ["SET synchronous_commit = local", "SET application_name = 'livelist watch'"])
        guard !closed else {
            try? await opened.connection.close()
            throw .connectionClosed
        }
        session = opened
        return opened
    }

    /// What the watch measured, with the stream's and the engine's positions as they are now.
    nonisolated func status(counts: StreamInbox.Counts) -> PostgresReplicationStatus {
        let now = ContinuousClock.now
        let (received, applied) = (inbox.reached, PostgresLSN(progress.applied))
        let measured = measured.withLock { measured in
            measured.watchdog.note(received: received.value, applied: applied.value, at: now)
            return measured
        }
        let stream: PostgresReplicationStatus.Stream
        var lag = measured.watchdog.lag(applied: applied.value, at: now)
        // No probe has succeeded for two intervals (PostgreSQL unreachable, or a probe hangs on a
        // cut network): nothing is known of the WAL since the last one, so the lag is at least that.
        if let probedAt = measured.probedAt, probedAt.duration(to: now) > interval * 2 {
            lag = (lag?.bytes ?? 0, max(lag?.seconds ?? .zero, probedAt.duration(to: now)))
        }
        switch inbox.session {
        case .connecting: stream = .connecting
        case .streaming: stream = .streaming
        case let .lost(since, error):
            stream = .lost(since: since, error: error)
            // Nothing is known of the WAL meanwhile: behind at least since the stream was lost.
            lag = (lag?.bytes ?? 0, max(lag?.seconds ?? .zero, since.duration(to: now)))
        }
        return PostgresReplicationStatus(
            stream: stream, walPosition: measured.watchdog.walPosition.map { PostgresLSN($0) }, received: received, applied: applied,
            lagBytes: lag?.bytes, lag: lag?.seconds, probedAt: measured.probedAt, probeFailure: measured.failure,
            commitsDecoded: counts.commitsDecoded, commitsApplied: counts.commitsTaken, streamReconnects: counts.sessionsLost,
            watchdogFirings: measured.watchdog.firings)
    }

    func close() async {
        closed = true
        if let session { try? await session.connection.close() }
        session = nil
    }
}
