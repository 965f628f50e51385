import Foundation
import Logging
import PostgresNIO

/// The runner of every live query over one PostgreSQL database: two connections, one logical
/// replication slot, and rounds. A round: the reading connection begins a REPEATABLE READ
/// transaction and takes its snapshot; the decoding connection then peeks the slot's committed
/// transactions (every one the snapshot sees is in the WAL by then); the queries absorb — in
/// commit order — those the snapshot sees and re-read the rows they touched in that snapshot;
/// the slot advances past them. So every update equals the query's result at the snapshot, and
/// its version is the commit LSN of the last transaction it includes (docs/POSTGRESQL.md).
///
/// The slot has a connection of its own because PostgreSQL drops a session's temporary slots on
/// any error in it, and the reads run the app's filter, which can fail (a division by zero in a
/// new row); the decoding connection only runs the slot's functions.
actor _PostgresEngine {
    let configuration: PostgresConnection.Configuration
    let slot: PostgresLiveDatabase.Slot
    let publication: String
    let logger: Logger
    let refetchThreshold: Int
    let timeout: Duration
    /// Runs the queries' SQL: the catalog, the snapshot, the reads.
    private var reader: _PgSession?
    /// Holds the slot: peeks and advances it, nothing else.
    private var decoder: _PgSession?
    private var slotName: String
    private var relations: [UInt32: _PgRelation] = [:]
    /// The open queries, in the order they opened: each round applies them in that order.
    private var runners: [any _PostgresQueryFollowing] = []
    /// The commit LSN of the last transaction absorbed.
    private(set) var version = PostgresLSN.zero
    private var busy = false
    private var gate: [CheckedContinuation<Void, Never>] = []
    private var closed = false
    /// Whether the slot was (re)created since the last round: commits before it were never seen.
    private var lostCommits = false
    /// Whether the last round failed: the queries were told, and are behind until one succeeds.
    private(set) var failing = false
    /// Whether a slot was taken before: commits may have fallen between it and a new one.
    private var hadSlot = false

    init(configuration: PostgresConnection.Configuration, slot: PostgresLiveDatabase.Slot, publication: String, refetchThreshold: Int,
         timeout: Duration, logger: Logger) {
        self.timeout = timeout
        self.configuration = configuration
        self.slot = slot
        self.publication = publication
        self.logger = logger
        self.refetchThreshold = refetchThreshold
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
    private func connected() async throws(PostgresLiveQueryError) -> (reader: _PgSession, decoder: _PgSession) {
        if let reader, reader.connection.isClosed {
            self.reader = nil
        }
        if let decoder, decoder.connection.isClosed {
            self.decoder = nil
        }
        let reader: _PgSession
        if let open = self.reader {
            reader = open
        } else {
            reader = try await open(id: 1)
            self.reader = reader
        }
        if let decoder { return (reader, decoder) }
        let decoder = try await open(id: 2)
        do throws(PostgresLiveQueryError) {
            let level = try await reader.text("SHOW wal_level") ?? ""
            guard level == "logical" else { throw PostgresLiveQueryError.logicalDecodingUnavailable(walLevel: level) }
            try await ensurePublication(reader)
            try await ensureSlot(decoder)
        } catch {
            try? await decoder.connection.close()
            throw error
        }
        // A new slot (or a slot taken up again) has not seen what was committed meanwhile.
        if hadSlot { lostCommits = true }
        hadSlot = true
        self.decoder = decoder
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

    private func ensurePublication(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        var binds = PostgresBindings()
        binds.append(publication)
        guard try await session.rows("SELECT 1 FROM pg_publication WHERE pubname = $1", binds).isEmpty else { return }
        do throws(PostgresLiveQueryError) {
            try await session.execute("CREATE PUBLICATION " + _PostgresPlan.quoted(publication) + " FOR ALL TABLES")
        } catch {
            if case let .server(failure, _) = error { throw .publicationMissing(publication, failure) }
            throw error
        }
    }

    private func ensureSlot(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        var binds = PostgresBindings()
        binds.append(slotName)
        if case .persistent = slot, try await !session.rows("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", binds).isEmpty {
            return
        }
        var create = PostgresBindings()
        create.append(slotName)
        create.append(slot == PostgresLiveDatabase.Slot.temporary)
        do throws(PostgresLiveQueryError) {
            try await session.execute("SELECT pg_create_logical_replication_slot($1, 'pgoutput', $2)", create)
        } catch {
            if case let .server(failure, _) = error { throw .replicationSlot(slotName, failure) }
            throw error
        }
    }

    // MARK: - Queries

    /// Opens a query: plans it, and reads its whole result in a round's snapshot, after the
    /// round has applied every commit that snapshot sees to the queries already open.
    func open<ID>(_ request: PostgresLiveQueryRequest<ID>) async throws(PostgresLiveQueryError) -> _PostgresQueryRunner<ID> {
        try await enter()
        defer { leave() }
        let (reader, decoder) = try await connected()
        let plan = try await _PostgresPlan.make(request, reader)
        if let table = try await unpublished(plan, reader) { throw .tableNotPublished(table: table, publication: publication) }
        var runner: _PostgresQueryRunner<ID>?
        let threshold = refetchThreshold
        try await round(reader, decoder) { version throws(PostgresLiveQueryError) in
            runner = try await _PostgresQueryRunner<ID>(plan: plan, version: version, refetchThreshold: threshold, reader)
        }
        guard let runner else { throw .connectionClosed }
        runners.append(runner)
        return runner
    }

    private func unpublished(_ plan: _PostgresPlan, _ session: _PgSession) async throws(PostgresLiveQueryError) -> String? {
        var binds = PostgresBindings()
        binds.append(publication)
        for oid in [plan.relationOID] + plan.otherRelations {
            var check = binds
            check.append(Int64(oid))
            let rows = try await session.rows("""
                SELECT 1 FROM pg_publication p WHERE p.pubname = $1 AND (p.puballtables
                   OR EXISTS (SELECT 1 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2::int8::oid)
                   OR EXISTS (SELECT 1 FROM pg_publication_namespace s JOIN pg_class c ON c.relnamespace = s.pnnspid
                              WHERE s.pnpubid = p.oid AND c.oid = $2::int8::oid))
                """, check)
            if rows.isEmpty { return oid == plan.relationOID ? plan.qualifiedName : "table \(oid)" }
        }
        return nil
    }

    func close(_ runner: any _PostgresQueryFollowing) {
        runners.removeAll { $0 === runner }
        runner.finish()
    }

    /// One round for every open query: what polling and ``PostgresLiveQuery/upToDate()`` run.
    func poll() async throws(PostgresLiveQueryError) {
        try await enter()
        defer { leave() }
        do throws(PostgresLiveQueryError) {
            let (reader, decoder) = try await connected()
            try await round(reader, decoder, then: nil)
            failing = false
        } catch {
            // Once per outage: the queries are behind until a round succeeds, and say so once.
            if !failing {
                for runner in runners { runner.lostTrack(error) }
            }
            failing = true
            if case .slotLost = error, let decoder {
                // The next round takes a new slot; what was committed meanwhile is refetched.
                try? await decoder.connection.close()
                self.decoder = nil
            }
            throw error
        }
    }

    /// The round: snapshot, peek, absorb what the snapshot sees, apply, `then` (in the same
    /// snapshot), commit, advance the slot.
    private func round(_ session: _PgSession, _ decoding: _PgSession, then: ((PostgresLSN) async throws(PostgresLiveQueryError) -> Void)?)
        async throws(PostgresLiveQueryError) {
        try await session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do throws(PostgresLiveQueryError) {
            guard let text = try await session.text("SELECT pg_current_snapshot()::text"), let snapshot = _PgSnapshot(text) else {
                throw PostgresLiveQueryError.malformedChange("pg_current_snapshot()")
            }
            var binds = PostgresBindings()
            binds.append(slotName)
            binds.append(publication)
            var decoder = _CommitDecoder(relations: relations)
            var commits: [_DecodedCommit] = []
            reading: for row in try await peek(decoding, binds) {
                guard let cell = row.first(where: { _ in true }), let bytes = cell.bytes else { throw .malformedChange("a NULL message") }
                let commit: _DecodedCommit?
                do {
                    commit = try decoder.feed(try _PgOutputMessage.parse(Array(bytes.readableBytesView)))
                } catch {
                    throw .malformedChange(error.description)
                }
                guard let commit else { continue }
                // Commit order: the first one the snapshot does not see ends what this round takes.
                guard snapshot.sees(committed: commit.xid) else { break reading }
                commits.append(commit)
            }
            relations = decoder.relations
            for commit in commits {
                for runner in runners { runner.absorb(commit, relations: relations) }
            }
            let reached = commits.last?.commitLSN ?? version
            if lostCommits {
                // Unless this outage was told already, the queries hear why they refetch.
                if !failing {
                    for runner in runners { runner.lostTrack(.slotLost(slotName)) }
                }
                lostCommits = false
            }
            for runner in runners { await runner.apply(version: reached, session) }
            version = reached
            try await then?(reached)
            try await session.execute("COMMIT")
            if let last = commits.last {
                var advance = PostgresBindings()
                advance.append(slotName)
                advance.append(last.endLSN.description)
                try await decoding.execute("SELECT pg_replication_slot_advance($1, $2::pg_lsn)", advance)
            }
        } catch {
            if !session.connection.isClosed { try? await session.execute("ROLLBACK") }
            throw error
        }
    }

    /// The slot's committed transactions from its position on, in commit order. A missing slot
    /// (dropped, or a temporary one gone with an error on its connection) is ``PostgresLiveQueryError/slotLost(_:)``.
    private func peek(_ decoding: _PgSession, _ binds: PostgresBindings) async throws(PostgresLiveQueryError) -> [PostgresRow] {
        do {
            return try await decoding.rows(
                "SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, 100000, 'proto_version', '1', 'publication_names', $2)",
                binds)
        } catch {
            if error.sqlState == "42704" { throw .slotLost(slotName) }
            throw error
        }
    }

    var isClosed: Bool { closed }

    func shutDown() async {
        closed = true
        for runner in runners { runner.finish() }
        runners = []
        for session in [reader, decoder].compactMap({ $0 }) { try? await session.connection.close() }
        reader = nil
        decoder = nil
        for waiter in gate { waiter.resume() }
        gate = []
    }
}
