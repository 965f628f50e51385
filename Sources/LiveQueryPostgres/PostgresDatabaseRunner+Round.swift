import PostgresNIO

extension PostgresDatabaseRunner {
    /// How long a round waits for the stream to bring what its snapshot sees before it asks the
    /// server to flush the WAL (written by a transaction still open, or committed without
    /// waiting for its flush); and before it gives up.
    static let flushAfter: Duration = .milliseconds(10)
    static let streamWait: Duration = .seconds(10)

    /// What a round came to.
    enum RoundOutcome: Equatable {
        /// It applied every commit its snapshot sees.
        case applied
        /// It applied the commits before the first one its snapshot does not see yet (committing
        /// now: its commit record is written, and it becomes visible in a moment).
        case stoppedAtUnseen
        /// Its snapshot saw commits out of commit order (or a read failed and aborted its
        /// transaction): what was taken stays taken, and a new snapshot is needed.
        case needsSnapshot

        /// Whether the round went through: what its snapshot saw up to its position is applied.
        var wentThrough: Bool { self != .needsSnapshot }
    }

    /// One round: snapshot, take from the stream the commits it sees, apply them to the queries
    /// they touched, `then` (in the same snapshot, with the round's position and the commits
    /// taken so far), commit. ``RoundOutcome/needsSnapshot`` when the snapshot saw commits out of
    /// commit order: what was taken stays taken (the next snapshot sees it too), and a new
    /// snapshot is needed.
    func round(then: ((UInt64, CommitLog) async throws(PostgresLiveQueryError) -> Void)?) async throws(PostgresLiveQueryError) -> RoundOutcome {
        guard hadSession else { throw .connectionClosed }
        let session = try await connectedReader()
        if let missed = streamState.takeMissedCommits() {
            // Commits may have been missed between the last session and the new slot: every query
            // says so (unless this outage was told already) and reads its result again.
            if missed == .tellQueries {
                for runner in runners { deliver(.lostTrack(.slotLost(slotName), heldThrough: progress.applied), to: runner) }
            }
            for runner in runners { attend(runner) }
        }
        // Sent together: the snapshot is read in the transaction, and the round waits once. Should
        // BEGIN fail, the statement after it fails or runs outside a transaction: either way the
        // round ends here.
        let begun = session.control.submit("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { _ in () }
        let position = session.control.submit("SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text") { $0 }
        _ = try await begun.value()
        snapshotsTaken += 1
        do throws(PostgresLiveQueryError) {
            guard let row = try await position.value().first else {
                throw PostgresLiveQueryError.malformedChange("pg_current_snapshot()")
            }
            let (snapshotText, insertText, flushText) = try PostgresPlan.decode(row, as: (String, String, String).self)
            guard let snapshot = PostgresSnapshot(snapshotText), let insert = PostgresLSN(insertText), let flushedTo = PostgresLSN(flushText) else {
                throw PostgresLiveQueryError.malformedChange("pg_current_snapshot() \(snapshotText) at \(insertText)")
            }
            // Every commit the snapshot sees ends at or before `insert`.
            let needed = Self.lastRecordEnd(insert: insert, pageSize: walBlockSize, segmentSize: walSegmentSize)
            // WAL past the flushed end cannot reach the stream until a commit flushes it: force
            // one at once rather than after a wait.
            guard case let (through, stoppedAtUnseen)? = try await takeCommits(seenBy: snapshot, needed: needed, unflushed: needed > flushedTo) else {
                try await session.control.execute("ROLLBACK")
                return .needsSnapshot
            }
            guard try await applyRowByRow(round: through, session) else {
                try await session.control.execute("ROLLBACK")
                return .needsSnapshot
            }
            // Refetched queries apart, on a lane, when one is free, in this snapshot.
            let apart = attention.values.filter { !$0.isDetached && $0.refetches && $0.needsRound }
            if !apart.isEmpty, !lanesBusy { try await detach(apart, round: through, from: session) }
            try await then?(through, log)
            // Not waited for: what the round read is delivered already, and the transaction only
            // read. A connection that went fails the next statement, which reconnects.
            session.control.submit("COMMIT") { _ in () }.future.whenFailure { [logger] error in
                logger.debug("a round's COMMIT failed", metadata: ["error": "\(error)"])
            }
            progress.applied = through
            return stoppedAtUnseen ? .stoppedAtUnseen : .applied
        } catch {
            if !session.connection.isClosed { try? await session.control.execute("ROLLBACK") }
            throw error
        }
    }

    /// Applies the queries followed row by row that have work: those whose work is a plain
    /// re-read together (`applyInBatches`), then each other one on its own. `false` when a read
    /// failed and aborted the transaction: a new round is needed.
    private func applyRowByRow(round through: UInt64, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> Bool {
        let due = attention.filter { !$0.value.isDetached && !$0.value.refetches && $0.value.needsRound }
        var together: Set<ObjectIdentifier> = []
        // After a batch failed, each query reads on its own once: the query that failed it says so itself.
        if state.roundMayBatch() {
            guard let applied = try await applyInBatches(due, round: through, session) else {
                state.batchFailed()
                return false
            }
            together = applied
            for key in applied where due[key]?.awaitsRound == false { attention[key] = nil }
        }
        for (key, runner) in due where !together.contains(key) {
            // Unguarded (no savepoint each side); a read that fails aborts the transaction: the
            // query is told, and the others go on in a new round.
            guard try await runner.apply(round: through, session, guarded: false) else { return false }
            // Kept while it still has work: a failure it recovers from, the rest of its first fetch.
            if !runner.awaitsRound { attention[key] = nil }
        }
        return true
    }

    /// Where the last WAL record written ends, from the insert position: the same, but when the
    /// next record would start a page, where the insert position is just past the page's header
    /// and the last record ends at the page's start. The header is 40 bytes on a segment's first
    /// page, 24 on the others; a record that ran over from the page before ends after the header,
    /// never at its end (40 bytes into a page that is not a segment's first is such an end).
    static func lastRecordEnd(insert: PostgresLSN, pageSize: UInt64, segmentSize: UInt64) -> PostgresLSN {
        let offset = insert.value % pageSize
        let header: UInt64 = insert.value % segmentSize < pageSize ? 40 : 24
        return offset == header ? PostgresLSN(insert.value - offset) : insert
    }

    /// Takes from the stream, in commit order, the commits the snapshot sees, each absorbed by the
    /// queries it touches, waiting until the stream has brought every commit that ends at or
    /// before `needed` (forcing a flush of the WAL at once when `unflushed`: some of it was not
    /// flushed when the snapshot was taken, else after ``flushAfter``). Returns the position the
    /// round applies through and whether it stops before a commit its snapshot does not see yet,
    /// or `nil` when the snapshot sees a commit after one it does not see.
    private func takeCommits(seenBy snapshot: PostgresSnapshot, needed: PostgresLSN,
                             unflushed: Bool) async throws(PostgresLiveQueryError) -> (through: UInt64, stoppedAtUnseen: Bool)? {
        let started = ContinuousClock.now
        var asked: ContinuousClock.Instant?
        var flushed = false
        while true {
            // Read first: every commit that ends at or before it was posted before the scan below.
            let reached = inbox.reached
            var unseen: PostgresLSN?
            var offset = 0
            var complete = false
            var lastTaken: UInt64 = 0
            scan: while let item = unseen == nil ? inbox.peek() : inbox.peek(at: offset) {
                switch item {
                case let .started(start):
                    // A new slot: commits before it may never have come, and this snapshot may see
                    // them. Every query reads its result again (the next round), so what waits
                    // before the new start goes.
                    inbox.drop(through: unseen == nil ? 0 : offset)
                    restarted(start)
                    return nil
                case let .commit(commit):
                    if commit.endLSN.value <= progress.applied, unseen == nil {
                        inbox.take()
                        continue
                    }
                    switch RoundSelection.decide(end: commit.endLSN, xid: commit.xid, seenBy: snapshot, needed: needed, afterUnseen: unseen != nil) {
                    case .take:
                        inbox.take()
                        absorb(commit)
                        lastTaken = commit.endLSN.value
                    case .holdBack:
                        if unseen == nil { unseen = commit.endLSN }
                        offset += 1
                    case .retry:
                        return nil
                    case .stop:
                        complete = true
                        break scan
                    }
                }
            }
            if complete || reached >= needed {
                // Every commit the snapshot may see is here: through `needed`, or up to the first it
                // does not see (committing now: its commit record is written, and it becomes
                // visible in a moment).
                return (unseen.map { $0.value - 1 } ?? max(needed.value, lastTaken), unseen != nil)
            }
            let now = ContinuousClock.now
            let waited = started.duration(to: now)
            if case let .lost(_, error) = inbox.session, waited >= Self.flushAfter { throw error }
            guard waited < Self.streamWait else { throw .timedOut(sql: "the replication stream to reach \(needed)", after: Self.streamWait) }
            if asked.map({ $0.duration(to: now) >= .milliseconds(2) }) ?? true {
                stream.requestPosition()
                asked = now
            }
            if !flushed, unflushed || waited >= Self.flushAfter {
                flushed = true
                await flushWAL()
            }
            await inbox.wait(timeout: .milliseconds(2))
        }
    }

    /// Gives a commit to the queries that read the tables it touched.
    private func absorb(_ commit: DecodedCommit) {
        var taken = commit
        relations.absorb(&taken)
        log.append(end: taken.endLSN.value, relations: taken.relations)
        for runner in concerned(by: taken) {
            deliver(.commit(taken, relations), to: runner)
            attend(runner)
        }
    }

    /// Commits a transaction that writes one record of its own — a transactional logical message,
    /// which `pgoutput` does not send — and so commits synchronously: PostgreSQL flushes the WAL
    /// through it, and the stream then reaches past what a snapshot saw (WAL a transaction still
    /// open wrote, or a read's page pruning, that no commit has flushed yet). A transaction that
    /// wrote nothing before its commit record (`SELECT txid_current()` alone) commits
    /// asynchronously, whatever `synchronous_commit` says: its flush waited for the WAL writer's
    /// next turn, `wal_writer_delay` (200 ms), and that was the tail of every look.
    private func flushWAL() async {
        flushesForced += 1
        do throws(PostgresLiveQueryError) {
            let session: PostgresSession
            if let flusher = state.session(.flusher), !flusher.connection.isClosed {
                session = flusher
            } else {
                session = try await openFlusher()
                // Shut down meanwhile: nothing may outlive it.
                guard state.adopt(session, as: .flusher) else {
                    try? await session.connection.close()
                    return
                }
            }
            try await session.control.execute("BEGIN READ WRITE")
            try await session.control.execute(Self.flushingStatement)
            try await session.control.execute("COMMIT")
        } catch {
            logger.debug("could not flush the WAL", metadata: ["error": "\(error)"])
        }
    }

    /// The statement of a transaction whose commit flushes the WAL at once (``flushWAL()``).
    static let flushingStatement = "SELECT pg_logical_emit_message(true, 'livelist', '')"

    private func openFlusher() async throws(PostgresLiveQueryError) -> PostgresSession {
        try await PostgresSession.connect(configuration, id: 5, logger: logger, timeout: timeout, aborts: inbox.aborts, settings: ["SET synchronous_commit = local"])
    }
}
