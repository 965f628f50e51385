import LiveQueryCore
import PostgresNIO

/// A round re-reads together the rows of queries that share their SELECT and differ in their
/// arguments (`_RereadBatch`): one statement per published query, not one per argument set.
extension _PostgresDatabaseRunner {
    /// Applies the due queries that can be re-read together, in batches of two or more. Returns
    /// the queries applied; `nil` when a batch's statement failed — the round's transaction is
    /// then aborted, and every query's work was put back (the next round reads each on its own).
    /// - Complexity: one statement per batch.
    func applyInBatches(_ due: [ObjectIdentifier: any _PostgresQueryFollowing], round through: UInt64,
                        _ session: _PostgresSession) async throws(PostgresLiveQueryError) -> Set<ObjectIdentifier>? {
        var groups: [String: [(key: ObjectIdentifier, runner: any _PostgresQueryFollowing)]] = [:]
        for (key, runner) in due {
            if let batch = runner.batchKey { groups[batch, default: []].append((key, runner)) }
        }
        // The joined and aggregated rows their commits changed, resolved first (and shared): a
        // lookup that fails aborts the round before any work is taken.
        var lookups = _RoundLookups()
        for group in groups.values where group.count >= 2 {
            for member in group {
                guard try await member.runner.resolveLookups(session, &lookups) else { return nil }
            }
        }
        var batches: [[(key: ObjectIdentifier, runner: any _PostgresQueryFollowing)]] = []
        for group in groups.values where group.count >= 2 {
            let members = group.filter { $0.runner.takeBatched() }
            if members.count >= 2 {
                batches.append(members)
            } else {
                for member in members { member.runner.giveBackBatched() }
            }
        }
        guard !batches.isEmpty else { return [] }
        // Every batch is read before any is applied: a failing read aborts the transaction, and
        // then nothing has been applied.
        var reads: [[[_ReadRow]]] = []
        do throws(PostgresLiveQueryError) {
            for batch in batches {
                reads.append(try await read(batch.map(\.runner), session))
                batchesRead += 1
            }
        } catch {
            for batch in batches { for member in batch { member.runner.giveBackBatched() } }
            if error.isLostConnection { throw error }
            logger.debug("a batch of re-reads failed; its queries read on their own", metadata: ["error": "\(error)"])
            return nil
        }
        var applied: Set<ObjectIdentifier> = []
        var aborted = false
        for (batch, rows) in zip(batches, reads) {
            for (member, mine) in zip(batch, rows) {
                if aborted {
                    // A grouped query's read of the groups that entered its result failed before.
                    member.runner.giveBackBatched()
                    continue
                }
                do throws(PostgresLiveQueryError) {
                    aborted = try await !member.runner.finishBatched(mine, round: through, session)
                } catch {
                    // The connection went (this member put its work back): the members not
                    // finished put theirs back too, for the next round.
                    for batch in batches { for member in batch { member.runner.giveBackBatched() } }
                    throw error
                }
                applied.insert(member.key)
            }
        }
        return aborted ? nil : applied
    }

    /// Each member's rows of one batch statement.
    private func read(_ members: [any _PostgresQueryFollowing], _ session: _PostgresSession) async throws(PostgresLiveQueryError) -> [[_ReadRow]] {
        let plan = members[0].plan
        guard let template = plan.rereadBatchSQL else { throw .malformedChange("a batch of re-reads without its statement") }
        var binds = PostgresBindings()
        for member in members { member.appendBatchRow(to: &binds) }
        let sql = _RereadBatch.sql(template: template, arguments: plan.arguments.count, rows: members.count)
        // Contents kept for the first rows only (bounded memory): rows past them are read again when their contents are asked for.
        let counter = _Ordinal()
        let rows = try await session.decoded(sql, binds) { row -> (Int, _ReadRow)? in
            guard let first = row.first(where: { _ in true }),
                  case let .integer(number) = _PostgresType.value(first.bytes, oid: UInt32(truncatingIfNeeded: first.dataType.rawValue)) else { return nil }
            let keeping = counter.next() < _PostgresRows.contentsKept
            return (Int(number), _PostgresRows.decode(row, plan, columns: row.count - 1, skipping: 1, keepingContents: keeping))
        }
        var byMember = [[_ReadRow]](repeating: [], count: members.count)
        for case let (number, read)? in rows where byMember.indices.contains(number) { byMember[number].append(read) }
        return byMember
    }
}
