import PostgresNIO

/// Queries that read their whole result again on every commit (refetched shapes: GROUP BY, LIMIT,
/// an ORDER BY expression…) are read apart: a round exports its snapshot to a connection of its own
/// (the lane), which reads them in that very snapshot while the round commits and the next rounds
/// go on — so the updates of queries followed row by row never wait behind whole reads. Commits that
/// touch a query while it is read apart wait for the next time it is read, one read for all of them.
extension _PostgresEngine {
    /// Reads `runners` apart in the snapshot of the round on `session`: the lane imports it before
    /// the round commits, and reads on while the engine goes on.
    func detach(_ runners: [any _PostgresQueryFollowing], round through: UInt64, from session: _PgSession) async throws(PostgresLiveQueryError) {
        let lane = try await connectedLane()
        guard let snapshot = try await session.control.text("SELECT pg_export_snapshot()"),
              snapshot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { throw .malformedChange("pg_export_snapshot()") }
        do throws(PostgresLiveQueryError) {
            try await lane.control.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try await lane.control.execute("SET TRANSACTION SNAPSHOT '\(snapshot)'")
        } catch {
            if !lane.connection.isClosed { try? await lane.control.execute("ROLLBACK") }
            throw error
        }
        for runner in runners { runner.detach() }
        laneBusy = true
        Task { await self.readApart(runners, round: through, lane) }
    }

    /// Applies each query on the lane, in its transaction; then hands them back to the rounds.
    private func readApart(_ runners: [any _PostgresQueryFollowing], round through: UInt64, _ lane: _PgSession) async {
        var failure: PostgresLiveQueryError?
        for runner in runners {
            if failure == nil {
                do throws(PostgresLiveQueryError) {
                    _ = try await runner.apply(round: through, lane, guarded: true)
                } catch {
                    // The lane's connection went: what this query took is read again by a round.
                    failure = error
                    runner.abandonApply()
                }
            }
            runner.isDetached = false
        }
        if failure == nil {
            do throws(PostgresLiveQueryError) { try await lane.control.execute("COMMIT") } catch { failure = error }
        }
        if let failure {
            logger.debug("refetch lane failed; its queries are read again", metadata: ["error": "\(failure)"])
            try? await lane.connection.close()
        }
        laneBusy = false
        for runner in runners where runner.awaitsRound { attend(runner) }
        inbox.signal()
    }

    /// The lane's connection, opened when closed.
    private func connectedLane() async throws(PostgresLiveQueryError) -> _PgSession {
        if let laneSession, !laneSession.connection.isClosed { return laneSession }
        laneSession = nil
        let opened = try await _PgSession.connect(configuration, id: 6, logger: logger, timeout: timeout, aborts: inbox.aborts, settings: _ContentsConnection.settings)
        guard !isClosed else {
            try? await opened.connection.close()
            throw .connectionClosed
        }
        laneSession = opened
        return opened
    }
}
