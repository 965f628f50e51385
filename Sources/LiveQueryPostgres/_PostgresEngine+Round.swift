import PostgresNIO

extension _PostgresEngine {
    /// Changes decoded per look at the slot: a backlog (a bulk load, a persistent slot taken up
    /// after a while) is read in batches of about this many, the slot advancing between them.
    static let batchChanges = 10_000

    /// Whether a round has work even when no WAL was written since the last one.
    private var hasPendingWork: Bool {
        lostCommits || failing || absorbedThrough != nil || awaitsUnseenCommit || runners.contains { $0.needsRound }
    }

    /// One round: snapshot, decode what it may see, apply, `then` (in the same snapshot), commit,
    /// advance the slot. `false` when the snapshot saw commits out of commit order (or before
    /// their WAL was flushed): nothing was applied, and a new snapshot is needed.
    ///
    /// With `quietCheck`, a round finds out first, in one statement, whether any WAL was written
    /// since the last one: when none was and no query waits for anything, it ends there.
    func round(_ session: _PgSession, _ decoding: _PgSession, quietCheck: Bool = false,
               then: ((PostgresLSN) async throws(PostgresLiveQueryError) -> Void)?) async throws(PostgresLiveQueryError) -> Bool {
        var flushed: PostgresLSN?
        if quietCheck, then == nil {
            let positions = try await decoding.control.rows("SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text")
            if let row = positions.first {
                let (insert, flush) = try _PostgresPlan.decode(row, as: (String, String).self)
                if let quietAt, PostgresLSN(insert) == quietAt, !hasPendingWork {
                    quietLooks += 1
                    return true
                }
                flushed = PostgresLSN(flush)
            }
        }
        try await session.control.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshotsTaken += 1
        do throws(PostgresLiveQueryError) {
            guard let row = try await session.control.rows("SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text").first else {
                throw PostgresLiveQueryError.malformedChange("pg_current_snapshot()")
            }
            let (snapshotText, insertText) = try _PostgresPlan.decode(row, as: (String, String).self)
            guard let snapshot = _PgSnapshot(snapshotText), let insert = PostgresLSN(insertText) else {
                throw PostgresLiveQueryError.malformedChange("pg_current_snapshot() \(snapshotText) at \(insertText)")
            }
            // Every commit the snapshot sees ends before `insert`; the slot's stream holds commits up
            // to the WAL flushed. A transaction committed without waiting for its flush
            // (synchronous_commit = off) is visible before that: wait until it is in the stream.
            // (At a page's start, the insert position is the end of the page's header, and the flushed
            // position stays at the page's start until more WAL comes: no commit ends in a header.)
            let offset = insert.value % walBlockSize
            let needed = offset <= 40 ? PostgresLSN(insert.value - offset) : insert
            guard try await flushedThrough(needed, known: flushed, decoding) else {
                try await session.control.execute("ROLLBACK")
                return false
            }
            guard try await absorbCommits(seenBy: snapshot, through: insert, decoding) else {
                try await session.control.execute("ROLLBACK")
                return false
            }
            let reached = absorbedThrough ?? version
            if lostCommits {
                // Unless this outage was told already, the queries hear why they refetch.
                if !failing {
                    for runner in runners { runner.lostTrack(.slotLost(slotName)) }
                }
                lostCommits = false
            }
            for runner in runners { try await runner.apply(version: reached, session) }
            version = reached
            try await then?(reached)
            try await session.control.execute("COMMIT")
            if let through = absorbedThrough {
                try await advance(to: through, decoding)
                absorbedThrough = nil
            }
            quietAt = insert
            return true
        } catch {
            if !session.connection.isClosed { try? await session.control.execute("ROLLBACK") }
            throw error
        }
    }

    /// Waits (briefly) until the WAL is flushed through `position`; `false` if it is not yet.
    private func flushedThrough(_ position: PostgresLSN, known: PostgresLSN?, _ decoding: _PgSession) async throws(PostgresLiveQueryError) -> Bool {
        if let known, known >= position { return true }
        for attempt in 0..<20 {
            if let text = try await decoding.control.text("SELECT pg_current_wal_flush_lsn()::text"), let flush = PostgresLSN(text), flush >= position {
                return true
            }
            // The WAL writer flushes asynchronous commits within a few wal_writer_delay (200 ms).
            try? await Task.sleep(for: .milliseconds(attempt < 5 ? 1 : 20))
        }
        return false
    }

    /// Decodes the slot's committed transactions up to `insert` and lets every query absorb, in
    /// commit order, those `snapshot` sees, stopping at the first it does not (the next round
    /// takes it). `false` when the snapshot sees a commit after one it does not see.
    private func absorbCommits(seenBy snapshot: _PgSnapshot, through insert: PostgresLSN, _ decoding: _PgSession)
        async throws(PostgresLiveQueryError) -> Bool {
        while true {
            var decoder = _CommitDecoder(relations: relations)
            var commits: [_DecodedCommit] = []
            /// The relations as known after each commit.
            var relationsAfter: [[UInt32: _PgRelation]] = []
            let rows = try await peek(decoding, upTo: insert)
            for row in rows {
                guard let cell = row.first(where: { _ in true }), let bytes = cell.bytes else { throw .malformedChange("a NULL message") }
                do {
                    if let commit = try decoder.feed(try _PgOutputMessage.parse(Array(bytes.readableBytesView))) {
                        commits.append(commit)
                        relationsAfter.append(decoder.relations)
                    }
                } catch {
                    throw .malformedChange(error.description)
                }
            }
            let count: Int
            let reachedUnseen: Bool
            switch _RoundSelection.select(commits, seenBy: snapshot) {
            case .retry: return false
            case let .apply(taken, unseen): (count, reachedUnseen) = (taken, unseen)
            }
            // The relations as of each commit taken: the next look describes the rest again, and a
            // shape known too early would hide its change.
            for (commit, known) in zip(commits[..<count], relationsAfter) {
                relations = known
                for runner in runners { runner.absorb(commit, relations: relations) }
                absorbedThrough = commit.endLSN
            }
            // A commit the snapshot does not see yet is in the WAL: the next look has work even if
            // no more WAL is written.
            awaitsUnseenCommit = reachedUnseen
            // A full batch may have left commits out: advance past what was absorbed and look again.
            guard rows.count >= Self.batchChanges, !reachedUnseen, count > 0, let through = absorbedThrough else { return true }
            try await advance(to: through, decoding)
        }
    }

    private func advance(to position: PostgresLSN, _ decoding: _PgSession) async throws(PostgresLiveQueryError) {
        var advance = PostgresBindings()
        advance.append(slotName)
        advance.append(position.description)
        try await decoding.execute("SELECT pg_replication_slot_advance($1, $2::pg_lsn)", advance)
    }

    /// The slot's committed transactions from its position on that commit before `position`, in
    /// commit order, about ``batchChanges`` changes at a time (a transaction is never cut). A
    /// missing slot (dropped, or a temporary one gone with an error on its connection) is
    /// ``PostgresLiveQueryError/slotLost(_:)``.
    private func peek(_ decoding: _PgSession, upTo position: PostgresLSN) async throws(PostgresLiveQueryError) -> [PostgresRow] {
        var binds = PostgresBindings()
        binds.append(slotName)
        binds.append(position.description)
        binds.append(Self.batchChanges)
        // A list of names, read as SQL names: quoted, so that its case is kept.
        binds.append(_PostgresPlan.quoted(publication))
        do {
            return try await decoding.rows(
                "SELECT data FROM pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, $3::int4, 'proto_version', '1', 'publication_names', $4)",
                binds)
        } catch {
            // 42704: no such slot (dropped, or a temporary one gone with its connection); 55000: it
            // was invalidated for holding more WAL than max_slot_wal_keep_size allows.
            if error.sqlState == "42704" || error.sqlState == "55000" { throw .slotLost(slotName) }
            throw error
        }
    }
}
