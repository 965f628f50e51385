import PostgresNIO

/// Queries that read their whole result again on every commit (refetched shapes: GROUP BY, LIMIT,
/// an ORDER BY expression…) are read apart: a round exports its snapshot to connections of their
/// own (the lanes, ``laneCount`` of them), which read them in that very snapshot while the round
/// commits and the next rounds go on — so the updates of queries followed row by row never wait
/// behind whole reads, and the whole reads of several queries run side by side. Commits that touch
/// a query while it is read apart wait for the next time it is read, one read for all of them: the
/// lane runs off the engine's actor, so they are held (``PostgresDatabaseRunner/lanes``, a
/// `LaneState`) and given to the query when the lane hands it back
/// (``PostgresDatabaseRunner/handBack(_:)``).
extension PostgresDatabaseRunner {
    /// How many lanes read at once, each on a connection of its own. One: measured with
    /// `pg.mixed` on two cores, a second lane let two whole reads run side by side and took the
    /// CPU the rounds of queries followed row by row needed (their median went from 8 to 18 ms).
    static let laneCount = 1

    /// Whether every lane is reading: refetched queries that are due wait for one.
    var lanesBusy: Bool { lanes.allBusy }

    /// Reads `runners` apart in the snapshot of the round on `session`, spread over the free lanes:
    /// each imports the snapshot before the round commits, and reads on while the engine goes on.
    func detach(_ runners: [any PostgresQueryFollowing], round through: UInt64, from session: PostgresSession) async throws(PostgresLiveQueryError) {
        let free = lanes.free
        guard !free.isEmpty, !runners.isEmpty else { return }
        guard let snapshot = try await session.control.text("SELECT pg_export_snapshot()"),
              snapshot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { throw .malformedChange("pg_export_snapshot()") }
        let used = Array(free.prefix(runners.count))
        var opened: [(Int, PostgresSession)] = []
        for number in used {
            let lane = try await connectedLane(number)
            // Sent together, waited for once.
            let begun = lane.control.submit("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { _ in () }
            let imported = lane.control.submit("SET TRANSACTION SNAPSHOT '\(snapshot)'") { _ in () }
            // The runner may shut down during this wait (the actor takes other calls): its
            // queries are told to finish then, and `lanes.take` below refuses them.
            do throws(PostgresLiveQueryError) {
                _ = try await begun.value()
                _ = try await imported.value()
            } catch {
                if !lane.connection.isClosed { try? await lane.control.execute("ROLLBACK") }
                for (_, other) in opened { try? await other.control.execute("ROLLBACK") }
                throw error
            }
            opened.append((number, lane))
        }
        // Spread by turns; each lane reads its share one query after the other.
        for (offset, (number, lane)) in opened.enumerated() {
            let share = runners.enumerated().filter { $0.offset % opened.count == offset }.map(\.element)
            guard lanes.take(number, for: share.map { (ObjectIdentifier($0), $0) }) else {
                // Refused: the runner shut down while the lane began (its queries were told to
                // finish; `shutDown` closes the lane's connection), or the lane reads, or a query
                // is read apart, already (never so while one round at a time detaches): its
                // queries stay with the rounds.
                try? await lane.control.execute("ROLLBACK")
                continue
            }
            for runner in share { runner.detach() }
            Task { await self.readApart(share, round: through, lane: number, lane) }
        }
    }

    /// Applies each query on the lane, in its transaction; then hands them back to the rounds. Once
    /// the runner shuts down, the queries not applied yet are not applied (each is handed back and
    /// told to finish), and none is given to a round again.
    private func readApart(_ runners: [any PostgresQueryFollowing], round through: UInt64, lane number: Int, _ lane: PostgresSession) async {
        var failure: PostgresLiveQueryError?
        var aborted = false
        for runner in runners {
            // Shut down meanwhile: nothing more is read (`shutDown` closes the lane's connection).
            if failure == nil, !aborted, !lanes.isClosed {
                do throws(PostgresLiveQueryError) {
                    // Unguarded, as a round's reads: a read that fails aborts the lane's transaction
                    // (the query says so); the queries after it are read again later.
                    aborted = try await !runner.apply(round: through, lane, guarded: false)
                } catch {
                    // The lane's connection went: what this query took is read again by a round.
                    failure = error
                    runner.abandonApply()
                }
            } else {
                // Not read: what it took is read again later.
                runner.abandonApply()
            }
            handBack(runner)
        }
        if lanes.isClosed {
            // Nothing to end: `shutDown` closes the connection, and with it the transaction.
        } else if aborted {
            do throws(PostgresLiveQueryError) { try await lane.control.execute("ROLLBACK") } catch { failure = error }
        } else if failure == nil {
            do throws(PostgresLiveQueryError) { try await lane.control.execute("COMMIT") } catch { failure = error }
        }
        if let failure {
            logger.debug("refetch lane failed; its queries are read again", metadata: ["error": "\(failure)"])
            try? await lane.connection.close()
        }
        // Each query was handed back as it was read, so none is left; one that were would be
        // handed back here, its work left to a round.
        for left in lanes.finished(number) ?? [] {
            left.query.abandonApply()
            left.query.reattach()
            for what in left.held { what.tell(left.query) }
        }
        // Shut down: its queries were told to finish, and `shutDown` emptied the attention.
        guard !lanes.isClosed else { return }
        for runner in runners where runner.awaitsRound { attend(runner) }
        inbox.signal()
    }

    /// A lane's connection, opened when closed.
    private func connectedLane(_ number: Int) async throws(PostgresLiveQueryError) -> PostgresSession {
        if let lane = state.session(.lane(number)), !lane.connection.isClosed { return lane }
        state.drop(.lane(number))
        let opened = try await PostgresSession.connect(configuration, id: 6 + number, logger: logger, timeout: timeout, aborts: inbox.aborts,
                                                  settings: ContentsConnection.settings)
        guard state.adopt(opened, as: .lane(number)) else {
            try? await opened.connection.close()
            throw .connectionClosed
        }
        return opened
    }
}
