import LiveQueryCore
import PostgresNIO

/// A round re-reads together the rows of queries that share their SELECT and differ in their
/// arguments (`RereadBatch`): one statement per published query, not one per argument set.
extension PostgresDatabaseRunner {
    /// Applies the due queries whose work is a plain re-read: those that share their statement in
    /// batches, each other one on its own. Their lookups are sent together, and then their reads,
    /// before the first answer is awaited: the statements wait behind each other on the
    /// connection, not one after another on this task. Returns the queries applied; `nil` when a
    /// statement failed — the round's transaction is then aborted, the queries applied before
    /// keep their update, and the others' work was put back (the next round reads each on its own).
    /// - Complexity: one statement per batch.
    func applyInBatches(_ due: [ObjectIdentifier: any PostgresQueryFollowing], round through: UInt64,
                        _ session: PostgresSession) async throws(PostgresLiveQueryError) -> Set<ObjectIdentifier>? {
        guard let batches = try await takeBatches(due, session) else { return nil }
        guard !batches.isEmpty else { return [] }
        return try await apply(batches, round: through, session)
    }

    typealias BatchMember = (key: ObjectIdentifier, runner: any PostgresQueryFollowing)

    /// The due queries that share their statement, their lookups resolved and their work taken,
    /// in batches of at most ``RereadBatch/maximumRows(arguments:)``; `nil` when a lookup
    /// failed (the round's transaction is aborted, no work was taken).
    private func takeBatches(_ due: [ObjectIdentifier: any PostgresQueryFollowing],
                             _ session: PostgresSession) async throws(PostgresLiveQueryError) -> [[BatchMember]]? {
        var groups: [String: [BatchMember]] = [:]
        for (key, runner) in due {
            if let batch = runner.batchKey { groups[batch, default: []].append((key, runner)) }
        }
        // The joined and aggregated rows their commits changed, resolved first (and shared): a
        // lookup that fails aborts the round before any work is taken.
        var lookups = RoundLookups()
        for group in groups.values {
            for member in group { member.runner.sendLookups(session, &lookups) }
        }
        for group in groups.values {
            for member in group {
                guard try await member.runner.resolveLookups(session, &lookups) else { return nil }
            }
        }
        var batches: [[BatchMember]] = []
        for group in groups.values {
            let members = group.filter { $0.runner.takeBatched() }
            // One query alone reads with its own re-read, in one statement as `reread` would.
            if members.count >= 2 || members.first.map({ $0.runner.batchedRows <= PostgresRows.rereadChunk }) == true {
                let most = RereadBatch.maximumRows(arguments: members[0].runner.plan.arguments.count)
                batches += stride(from: 0, to: members.count, by: most).map { Array(members[$0..<min($0 + most, members.count)]) }
            } else {
                for member in members { member.runner.giveBackBatched() }
            }
        }
        return batches
    }

    /// Sends every batch's statement, then applies each batch as its rows come: the queries
    /// applied, or `nil` when a read failed and aborted the transaction (the others put their
    /// work back).
    private func apply(_ batches: [[BatchMember]], round through: UInt64,
                       _ session: PostgresSession) async throws(PostgresLiveQueryError) -> Set<ObjectIdentifier>? {
        // Every statement is sent before the first answer is awaited, and each batch is applied as
        // its rows come. A read that fails aborts the transaction (the statements after it fail
        // too): the queries applied stay applied, the others put their work back.
        func giveBack(from start: Int) {
            for batch in batches[start...] { for member in batch { member.runner.giveBackBatched() } }
        }
        var sent: [PendingRows<(Int, ReadRow)?>] = []
        for batch in batches {
            do throws(PostgresLiveQueryError) {
                sent.append(try send(batch.map(\.runner), session))
            } catch {
                giveBack(from: 0)
                logger.debug("a batch of re-reads could not be made; its queries read on their own", metadata: ["error": "\(error)"])
                return nil
            }
        }
        // A member that reads more as it is applied (a grouped query reads the rows of the groups
        // that entered its result) queues that statement behind every read sent: a read failing
        // there would fail it too. A round with such a member awaits every read before applying.
        let readsMore = batches.contains { batch in batch.contains { !$0.runner.plan.children.isEmpty } }
        var reads: [[[ReadRow]]] = []
        var applied: Set<ObjectIdentifier> = []
        var aborted = false
        for (index, batch) in batches.enumerated() {
            guard !aborted else {
                giveBack(from: index)
                break
            }
            while reads.count <= (readsMore ? batches.count - 1 : index) {
                let number = reads.count
                var byMember = [[ReadRow]](repeating: [], count: batches[number].count)
                do throws(PostgresLiveQueryError) {
                    for case let (member, read)? in try await sent[number].value() where byMember.indices.contains(member) { byMember[member].append(read) }
                } catch {
                    giveBack(from: index)
                    if error.isLostConnection { throw error }
                    logger.debug("a batch of re-reads failed; its queries read on their own", metadata: ["error": "\(error)"])
                    return nil
                }
                if batches[number].count >= 2 { batchesRead += 1 }
                reads.append(byMember)
            }
            for (member, mine) in zip(batch, reads[index]) {
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
                    giveBack(from: index)
                    throw error
                }
                applied.insert(member.key)
            }
        }
        return aborted ? nil : applied
    }

    /// Sends the statement that reads each member's rows, prepared on the connection: the batch's
    /// (its rows padded to ``RereadBatch/rows(for:)``), or the plain re-read of a lone member
    /// without arguments. Each row comes with its member's number.
    private func send(_ members: [any PostgresQueryFollowing], _ session: PostgresSession) throws(PostgresLiveQueryError) -> PendingRows<(Int, ReadRow)?> {
        let plan = members[0].plan
        let rows = members.map(\.batchRow)
        // Contents kept for the first rows only (bounded memory): rows past them are read again when their contents are asked for.
        let counter = Ordinal()
        if members.count == 1, rows[0].arguments.isEmpty {
            return session.submit(prepared: plan.rereadSQL, StatementParameters(texts: rows[0].identities)) { row -> (Int, ReadRow)? in
                let keeping = counter.next() < PostgresRows.contentsKept
                return (0, PostgresRows.decode(row, plan, columns: row.count, keepingContents: keeping))
            }
        }
        let types = rows[0].arguments.compactMap(StatementParameters.typeName(of:))
        guard let template = plan.rereadBatchSQL, types.count == rows[0].arguments.count else {
            throw .malformedChange("a batch of re-reads without its statement")
        }
        let padded = RereadBatch.rows(for: members.count)
        var parameters = StatementParameters()
        for index in 0..<padded {
            let row = index < rows.count ? rows[index] : (arguments: rows[0].arguments, identities: [String]())
            for argument in row.arguments { parameters.append(argument) }
            parameters.append(row.identities)
        }
        let sql = RereadBatch.sql(template: template, argumentTypes: types, rows: padded)
        return session.submit(prepared: sql, parameters) { row -> (Int, ReadRow)? in
            guard let first = row.first(where: { _ in true }),
                  case let .integer(number) = PostgresType.value(first.bytes, oid: UInt32(truncatingIfNeeded: first.dataType.rawValue)) else { return nil }
            let keeping = counter.next() < PostgresRows.contentsKept
            return (Int(number), PostgresRows.decode(row, plan, columns: row.count - 1, skipping: 1, keepingContents: keeping))
        }
    }
}
