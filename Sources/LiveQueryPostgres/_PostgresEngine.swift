import Foundation
import Logging
import PostgresNIO

/// The runner of every live query over one PostgreSQL database: two connections, one logical
/// replication slot, and rounds (`_PostgresEngine+Round.swift`). A round takes a REPEATABLE READ
/// snapshot, decodes the committed transactions it may see, lets each query absorb them in
/// commit order and re-read what they touched in that snapshot, then advances the slot: every
/// update equals the query's result after exactly the commits it includes, and its version is
/// the end of the last one (docs/POSTGRESQL.md).
///
/// The slot has a connection of its own because PostgreSQL drops a session's temporary slots on
/// any error in it, and the reads run the app's filter, which can fail (a division by zero in a
/// new row); the decoding connection only runs the slot's functions and LISTENs.
actor _PostgresEngine {
    let configuration: PostgresConnection.Configuration
    let slot: PostgresLiveDatabase.Slot
    let publication: String
    let logger: Logger
    let refetchThreshold: Int
    let timeout: Duration
    let wake: PostgresLiveDatabase.WakeUp
    /// Runs the queries' SQL: the catalog, the snapshot, the reads.
    var reader: _PgSession?
    /// Holds the slot: peeks and advances it, reads WAL positions, listens; nothing else.
    var decoder: _PgSession?
    var slotName: String
    var relations: [UInt32: _PgRelation] = [:]
    /// The open queries, in the order they opened: each round applies them in that order.
    var runners: [any _PostgresQueryFollowing] = []
    /// The end of the last commit applied (or the slot's position when none was).
    var version = PostgresLSN.zero
    /// The end of the last commit absorbed but not applied yet: a round that decoded more than one
    /// batch advanced the slot past it, then had to take a new snapshot.
    var absorbedThrough: PostgresLSN?
    /// The WAL insert position when the last applied round took its snapshot: a look that finds
    /// it unchanged, with nothing pending, has nothing to do.
    var quietAt: PostgresLSN?
    /// Whether the last round stopped at a commit its snapshot did not see yet.
    var awaitsUnseenCommit = false
    /// The WAL's page size (`wal_block_size`).
    var walBlockSize: UInt64 = 8_192
    /// Rounds that took a snapshot, and looks that found nothing to do (for the tests).
    var snapshotsTaken = 0
    var quietLooks = 0
    private var busy = false
    private var gate: [CheckedContinuation<Void, Never>] = []
    private var closed = false
    /// Whether the slot was (re)created since the last round: commits before it were never seen.
    var lostCommits = false
    /// Whether the last round failed: the queries were told, and are behind until one succeeds.
    private(set) var failing = false
    /// Whether a slot was taken before: commits may have fallen between it and a new one.
    private var hadSlot = false
    /// Whether the publication names a partitioned table's changes by the table.
    var publishesViaRoot = false
    /// Reads rows' contents, beside the rounds.
    let contents: _ContentsConnection
    /// The tables whose commits notify the decoding connection (``PostgresLiveDatabase/WakeUp/notify(fallback:)``).
    private var notifying: Set<UInt32> = []
    let signals: _WakeSignals
    /// What names this database's positions (the cluster, its timeline, the database).
    let identity = _PositionIdentity()

    init(configuration: PostgresConnection.Configuration, slot: PostgresLiveDatabase.Slot, publication: String, refetchThreshold: Int,
         timeout: Duration, wake: PostgresLiveDatabase.WakeUp, logger: Logger) {
        self.timeout = timeout
        self.configuration = configuration
        self.slot = slot
        self.publication = publication
        self.logger = logger
        self.refetchThreshold = refetchThreshold
        self.wake = wake
        signals = _WakeSignals()
        contents = _ContentsConnection(configuration: configuration, timeout: timeout, logger: logger)
        switch slot {
        case .temporary: slotName = "livelist_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        case let .persistent(name): slotName = name
        }
    }

    // MARK: - One round at a time

    private func enter() async throws(PostgresLiveQueryError) {
        while busy { await withCheckedContinuation { gate.append($0) } }
        guard !closed else { throw .connectionClosed }
        busy = true
    }

    private func leave() {
        busy = false
        if !gate.isEmpty { gate.removeFirst().resume() }
    }

    /// The two connections, opened (with the slot) when closed.
    func connected() async throws(PostgresLiveQueryError) -> (reader: _PgSession, decoder: _PgSession) {
        if let reader, reader.connection.isClosed {
            self.reader = nil
        }
        if let decoder, decoder.connection.isClosed {
            self.decoder = nil
            notifying = []
        }
        let reader: _PgSession
        if let open = self.reader {
            reader = open
        } else {
            reader = try await open(id: 1)
            for setting in _ContentsConnection.settings { try await reader.execute(setting) }
            self.reader = reader
        }
        if let decoder { return (reader, decoder) }
        let decoder = try await open(id: 2)
        do throws(PostgresLiveQueryError) {
            let level = try await reader.text("SHOW wal_level") ?? ""
            guard level == "logical" else { throw PostgresLiveQueryError.logicalDecodingUnavailable(walLevel: level) }
            try await ensurePublication(reader)
            let position = try await ensureSlot(decoder)
            try await identity.read(decoder)
            if let size = try await decoder.text("SHOW wal_block_size").flatMap({ UInt64($0) }), size > 0 { walBlockSize = size }
            // A new slot (or a slot taken up again) has not seen what was committed meanwhile.
            if hadSlot {
                lostCommits = true
                absorbedThrough = nil
            }
            hadSlot = true
            version = max(version, position)
            if case .notify = wake { try await listen(decoder) }
        } catch {
            try? await decoder.connection.close()
            throw error
        }
        self.decoder = decoder
        quietAt = nil
        return (reader, decoder)
    }

    private func open(id: Int) async throws(PostgresLiveQueryError) -> _PgSession {
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            return _PgSession(connection: connection, logger: logger, timeout: timeout)
        } catch {
            throw _PgSession.failure(error, sql: "connect")
        }
    }

    /// Creates the publication when missing (its partitioned tables' changes named by the table,
    /// not the partition); notes whether it names them so.
    private func ensurePublication(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        var binds = PostgresBindings()
        binds.append(publication)
        if let row = try await session.rows("SELECT pubviaroot FROM pg_publication WHERE pubname = $1", binds).first {
            publishesViaRoot = try _PostgresPlan.decode(row, as: Bool.self)
            return
        }
        do throws(PostgresLiveQueryError) {
            try await session.execute("CREATE PUBLICATION " + _PostgresPlan.quoted(publication) + " FOR ALL TABLES WITH (publish_via_partition_root = true)")
            publishesViaRoot = true
        } catch {
            if case let .server(failure, _) = error { throw .publicationMissing(publication, failure) }
            throw error
        }
    }

    /// Creates the slot, or takes up a persistent one; its position: commits that end at or
    /// before it are not in its stream (they are in every snapshot taken from now on).
    private func ensureSlot(_ session: _PgSession) async throws(PostgresLiveQueryError) -> PostgresLSN {
        var binds = PostgresBindings()
        binds.append(slotName)
        if case .persistent = slot,
           let row = try await session.rows("SELECT confirmed_flush_lsn::text, wal_status::text FROM pg_replication_slots WHERE slot_name = $1",
                                            binds).first {
            let (position, status) = try _PostgresPlan.decode(row, as: (String?, String?).self)
            guard status == "lost" else { return PostgresLSN(position ?? "") ?? .zero }
            // Invalidated (it held more WAL than max_slot_wal_keep_size allows): commits since were
            // lost to it; a new slot is taken, and every query refetches.
            logger.warning("replication slot invalidated; taking a new one", metadata: ["slot": "\(slotName)"])
            try await session.execute("SELECT pg_drop_replication_slot($1)", binds)
        }
        var create = PostgresBindings()
        create.append(slotName)
        create.append(slot == PostgresLiveDatabase.Slot.temporary)
        do throws(PostgresLiveQueryError) {
            let text = try await session.text("SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput', $2)", create)
            return text.flatMap(PostgresLSN.init) ?? .zero
        } catch {
            if case let .server(failure, _) = error { throw .replicationSlot(slotName, failure) }
            throw error
        }
    }

    // MARK: - Wake-ups

    /// LISTENs for the notifications of the tables' statement triggers on the decoding connection.
    private func listen(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        let signals = signals
        let connection = session.connection
        let started = _ListenStart()
        Task {
            do {
                try await connection.listen(on: _NotifyTrigger.channel) { notifications in
                    started.succeed()
                    for try await _ in notifications { signals.signal() }
                }
            } catch {
                started.fail(error)
            }
            // The connection went: the next round reconnects and listens again.
            signals.signal()
        }
        if let error = await started.outcome() { throw _PgSession.failure(error, sql: "LISTEN \(_NotifyTrigger.channel)") }
    }

    /// Makes sure every table `runner` reads notifies on commit; a table the role may not add a
    /// trigger to is followed by the fallback poll, said once in the log.
    private func notify(for runner: any _PostgresQueryFollowing, _ session: _PgSession) async {
        guard case .notify = wake else { return }
        for oid in runner.relationsRead.sorted() where !notifying.contains(oid) {
            do throws(PostgresLiveQueryError) {
                try await _NotifyTrigger.install(on: oid, session)
                notifying.insert(oid)
            } catch {
                notifying.insert(oid)
                logger.warning("commits to a table are seen by polling only: no notification trigger could be added",
                               metadata: ["table": "\(oid)", "error": "\(error)"])
            }
        }
    }

    // MARK: - Queries

    /// Opens a query: plans it, and reads its whole result in a round's snapshot, after the
    /// round has applied every commit that snapshot sees to the queries already open.
    func open<ID>(_ request: PostgresLiveQueryRequest<ID>, firstScreen: Int?) async throws(PostgresLiveQueryError) -> _PostgresQueryRunner<ID> {
        try await enter()
        defer { leave() }
        let (reader, _) = try await connected()
        let plan = try await _PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, reader)
        if let table = try await unpublished(plan, reader) { throw .tableNotPublished(table: table, publication: publication) }
        var runner: _PostgresQueryRunner<ID>?
        var rest: _PgSession?
        let (threshold, configuration, logger, timeout, viaRoot) = (refetchThreshold, configuration, logger, timeout, publishesViaRoot)
        // The tables' shapes as planned: a relation message that differs is a schema change.
        for role in plan.roles where relations[role.table.oid] == nil { relations[role.table.oid] = role.table.relation }
        for _ in 0..<100 {
            let (reader, decoder) = try await connected()
            let applied: Bool
            do throws(PostgresLiveQueryError) {
                applied = try await round(reader, decoder) { version throws(PostgresLiveQueryError) in
                    let opened = try await _PostgresQueryRunner<ID>(request: request, plan: plan, publishesViaRoot: viaRoot, version: version,
                                                                    refetchThreshold: threshold, firstScreen: firstScreen, reader)
                    runner = opened
                    // The rest of a large result is read beside the rounds, in this very snapshot.
                    if !opened.isWhole {
                        rest = try await Self.importSnapshot(of: reader, configuration: configuration, logger: logger, timeout: timeout)
                    }
                }
            } catch {
                // The snapshot's reader holds a transaction open: it must not outlive a failed open.
                if let rest { try? await rest.connection.close() }
                throw error
            }
            if applied { break }
            if let rest { try? await rest.connection.close() }
            rest = nil
            try? await Task.sleep(for: .milliseconds(2))
        }
        guard let runner else { throw .timedOut(sql: "a snapshot that sees the commits in commit order", after: .seconds(1)) }
        runners.append(runner)
        if let rest {
            let signals = signals
            runner.readRest(on: rest) { signals.signal() }
        }
        if let reader = self.reader { await notify(for: runner, reader) }
        return runner
    }

    /// How a request would be followed, without following it.
    func explain<ID>(_ request: PostgresLiveQueryRequest<ID>) async throws(PostgresLiveQueryError) -> _PostgresPlan {
        try await enter()
        defer { leave() }
        let (reader, _) = try await connected()
        let plan = try await _PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, reader)
        if let table = try await unpublished(plan, reader) { throw .tableNotPublished(table: table, publication: publication) }
        return plan
    }

    /// A connection of its own in a transaction that sees what `session`'s transaction sees
    /// (`pg_export_snapshot`, `SET TRANSACTION SNAPSHOT`), for a long read beside the rounds.
    private static func importSnapshot(of session: _PgSession, configuration: PostgresConnection.Configuration, logger: Logger,
                                       timeout: Duration) async throws(PostgresLiveQueryError) -> _PgSession {
        guard let snapshot = try await session.text("SELECT pg_export_snapshot()"),
              snapshot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { throw .malformedChange("pg_export_snapshot()") }
        let reader: _PgSession
        do {
            reader = _PgSession(connection: try await PostgresConnection.connect(on: _LongReads.group.next(), configuration: configuration,
                                                                                 id: 4, logger: logger),
                                logger: logger, timeout: timeout)
        } catch {
            throw _PgSession.failure(error, sql: "connect")
        }
        do throws(PostgresLiveQueryError) {
            try await reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try await reader.execute("SET TRANSACTION SNAPSHOT '\(snapshot)'")
            for setting in _ContentsConnection.settings { try await reader.execute(setting) }
        } catch {
            try? await reader.connection.close()
            throw error
        }
        return reader
    }

    /// Why a table the query reads is not followable through the publication: not in it (its name),
    /// or some of its changes left out.
    private func unpublished(_ plan: _PostgresPlan, _ session: _PgSession) async throws(PostgresLiveQueryError) -> String? {
        var binds = PostgresBindings()
        binds.append(publication)
        for oid in plan.relationsRead.sorted() {
            var check = binds
            check.append(Int64(oid))
            let rows = try await session.rows("""
                SELECT p.pubinsert AND p.pubupdate AND p.pubdelete AND p.pubtruncate,
                       p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate,
                       coalesce((SELECT bool_or(to_jsonb(r) ->> 'prqual' IS NOT NULL OR to_jsonb(r) ->> 'prattrs' IS NOT NULL)
                                 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2::int8::oid), false)
                FROM pg_publication p WHERE p.pubname = $1 AND (p.puballtables
                   OR EXISTS (SELECT 1 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2::int8::oid)
                   OR EXISTS (SELECT 1 FROM pg_publication_namespace s JOIN pg_class c ON c.relnamespace = s.pnnspid
                              WHERE s.pnpubid = p.oid AND c.oid = $2::int8::oid))
                """, check)
            guard let row = rows.first else { return plan.name(of: oid) }
            let (all, inserts, updates, deletes, truncates, filtered) = try _PostgresPlan.decode(row, as: (Bool, Bool, Bool, Bool, Bool, Bool).self)
            var omitted = zip([inserts, updates, deletes, truncates], ["inserts", "updates", "deletes", "truncates"]).filter { !$0.0 }.map(\.1)
            if filtered { omitted.append("rows or columns outside its row filter or column list") }
            if !all || filtered {
                throw .publicationOmitsChanges(table: plan.name(of: oid), publication: publication, omitted: omitted.joined(separator: ", "))
            }
        }
        return nil
    }

    func close(_ runner: any _PostgresQueryFollowing) {
        runners.removeAll { $0 === runner }
        runner.finish()
    }

    /// Rounds until one applies what was committed before the call: what polling and
    /// ``PostgresLiveQuery/upToDate()`` run. A round whose snapshot saw commits out of commit
    /// order is taken again at once.
    func poll(force: Bool = false) async throws(PostgresLiveQueryError) {
        try await enter()
        defer { leave() }
        do throws(PostgresLiveQueryError) {
            for attempt in 0..<100 {
                let (reader, decoder) = try await connected()
                if try await round(reader, decoder, quietCheck: !force, then: nil) { break }
                try? await Task.sleep(for: .milliseconds(attempt < 10 ? 1 : 10))
            }
            failing = false
        } catch {
            // Once per outage: the queries are behind until a round succeeds, and say so once.
            if !failing {
                for runner in runners { runner.lostTrack(error) }
            }
            failing = true
            quietAt = nil
            if case .slotLost = error, let decoder {
                // The next round takes a new slot; what was committed meanwhile is refetched.
                try? await decoder.connection.close()
                self.decoder = nil
            }
            throw error
        }
    }

    var isClosed: Bool { closed }

    func shutDown() async {
        closed = true
        for runner in runners { runner.finish() }
        runners = []
        for session in [reader, decoder].compactMap({ $0 }) { try? await session.connection.close() }
        await contents.close()
        reader = nil
        decoder = nil
        for waiter in gate { waiter.resume() }
        gate = []
        signals.finish()
    }
}

/// Whether a LISTEN took: resumed once, by the first of its start and its failure.
/// `@unchecked Sendable`: `result`, `isDone` and `waiter` are only touched under `lock`.
final class _ListenStart: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<Void, any Error>?
    private var isDone = false
    private var waiter: CheckedContinuation<(any Error)?, Never>?

    func succeed() { finish(.success(())) }
    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ outcome: Result<Void, any Error>) {
        let waiter: CheckedContinuation<(any Error)?, Never>? = lock.withLock {
            guard !isDone else { return nil }
            isDone = true
            result = outcome
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: Self.error(outcome))
    }

    func outcome() async -> (any Error)? {
        await withCheckedContinuation { continuation in
            let done: Result<Void, any Error>? = lock.withLock {
                if !isDone { waiter = continuation }
                return result
            }
            if let done { continuation.resume(returning: Self.error(done)) }
        }
    }

    private static func error(_ outcome: Result<Void, any Error>) -> (any Error)? {
        if case let .failure(error) = outcome { return error }
        return nil
    }
}
