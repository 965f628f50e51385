import Foundation
import Logging
import PostgresNIO

extension PostgresDatabaseRunner {
    // MARK: - Queries

    /// Opens a query: plans it, and reads its result in a round's snapshot, after the round has
    /// applied every commit that snapshot sees to the queries already open.
    func open<ID>(_ request: PostgresLiveQueryRequest<ID>, firstScreen: Int?) async throws(PostgresLiveQueryError) -> PostgresQueryRunner<ID> {
        try await enter()
        defer { leave() }
        try await awaitStreaming()
        let reader = try await connectedReader()
        let plan = try await PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, reader)
        if let table = try await unpublished(plan, reader) { throw .tableNotPublished(table: table, publication: publication) }
        var runner: PostgresQueryRunner<ID>?
        var rest: PostgresSession?
        let (threshold, configuration, logger, timeout, viaRoot, progress) = (refetchThreshold, configuration, logger, timeout, publishesViaRoot, progress)
        let aborts = inbox.aborts
        // The tables' shapes as planned: a relation message that differs is a schema change.
        for role in plan.roles { relations.planned(role.table.relation) }
        for attempt in 0..<100 {
            let applied: Bool
            do throws(PostgresLiveQueryError) {
                applied = try await round { through, log throws(PostgresLiveQueryError) in
                    let from = log.lastTouch(of: plan.relationsRead, atOrBefore: through)
                    let opened = try await PostgresQueryRunner<ID>(request: request, plan: plan, publishesViaRoot: viaRoot, holdsFrom: from,
                                                                    progress: progress, refetchThreshold: threshold, firstScreen: firstScreen,
                                                                    reader)
                    runner = opened
                    // The rest of a large result is read beside the rounds, in this very snapshot.
                    if !opened.isWhole {
                        rest = try await Self.importSnapshot(of: reader, configuration: configuration, logger: logger, timeout: timeout, aborts: aborts)
                    }
                }.wentThrough
            } catch {
                // The snapshot's reader holds a transaction open: it must not outlive a failed open.
                if let rest { try? await rest.connection.close() }
                throw error
            }
            if applied { break }
            if let rest { try? await rest.connection.close() }
            rest = nil
            try? await Task.sleep(for: .milliseconds(attempt < 10 ? 1 : 10))
        }
        guard let runner else { throw .timedOut(sql: "a snapshot that sees the commits in commit order", after: .seconds(1)) }
        runners.append(runner)
        indexReaders()
        // A first screen waits for the rest of its fetch, which a later round completes.
        if runner.awaitsRound { attend(runner) }
        if let rest {
            let inbox = inbox
            runner.readRest(on: rest) { inbox.signal() }
        }
        stream.confirm(PostgresLSN(progress.applied))
        return runner
    }

    /// Waits (within the engine's timeout) for the stream to be streaming.
    func awaitStreaming() async throws(PostgresLiveQueryError) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            takeSessionItems()
            if hadSession, isStreaming { return }
            guard !isClosed else { throw .connectionClosed }
            guard ContinuousClock.now < deadline else {
                if case let .lost(_, error) = inbox.session { throw error }
                throw .timedOut(sql: "START_REPLICATION", after: timeout)
            }
            await inbox.wait(timeout: .milliseconds(50))
        }
    }

    func indexReaders() {
        readers = [:]
        for runner in runners { for oid in runner.relationsRead { readers[oid, default: []].append(runner) } }
    }

    /// How a request would be followed, without following it.
    func explain<ID>(_ request: PostgresLiveQueryRequest<ID>) async throws(PostgresLiveQueryError) -> PostgresPlan {
        try await enter()
        defer { leave() }
        let reader = try await connectedReader()
        let plan = try await PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, reader)
        if let table = try await unpublished(plan, reader) { throw .tableNotPublished(table: table, publication: publication) }
        return plan
    }

    /// A connection of its own in a transaction that sees what `session`'s transaction sees
    /// (`pg_export_snapshot`, `SET TRANSACTION SNAPSHOT`), for a long read beside the rounds.
    static func importSnapshot(of session: PostgresSession, configuration: PostgresConnection.Configuration, logger: Logger,
                                       timeout: Duration, aborts: StatementAborts) async throws(PostgresLiveQueryError) -> PostgresSession {
        guard let snapshot = try await session.text("SELECT pg_export_snapshot()"),
              snapshot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { throw .malformedChange("pg_export_snapshot()") }
        return try await PostgresSession.connect(configuration, on: LongReads.group.next(), id: 4, logger: logger, timeout: timeout, aborts: aborts,
                                            settings: ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "SET TRANSACTION SNAPSHOT '\(snapshot)'"]
                                                + ContentsConnection.settings)
    }

    /// Why a table the query reads is not followable through the publication: not in it (its name),
    /// or some of its changes left out.
    func unpublished(_ plan: PostgresPlan, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> String? {
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
            let (all, inserts, updates, deletes, truncates, filtered) = try PostgresPlan.decode(row, as: (Bool, Bool, Bool, Bool, Bool, Bool).self)
            var omitted = zip([inserts, updates, deletes, truncates], ["inserts", "updates", "deletes", "truncates"]).filter { !$0.0 }.map(\.1)
            if filtered { omitted.append("rows or columns outside its row filter or column list") }
            if !all || filtered {
                throw .publicationOmitsChanges(table: plan.name(of: oid), publication: publication, omitted: omitted.joined(separator: ", "))
            }
        }
        return nil
    }
}
