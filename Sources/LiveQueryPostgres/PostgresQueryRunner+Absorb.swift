import Foundation
import ListDiff
import LiveQueryCore
import PostgresNIO

/// Taking in commits: which of a query's rows each touches, and the joined rows whose changes it
/// must look up when the round applies it.
extension PostgresQueryRunner {
    func absorb(_ commit: DecodedCommit, relations: KnownRelations) {
        let read = plan.relationsRead
        let end = commit.endLSN.value
        if tracker.isBuilding { firstFetch.withLock { $0.touched(at: end) } }
        var entry = AbsorbedCommit(end: end)
        defer { work.absorb(entry, reshaped: !commit.reshaped.isDisjoint(with: read)) }
        deliveries.withLock { if $0.positions.pendingFrom == nil { $0.positions.pendingFrom = end } }
        guard tracker.state.wantsRows else { return }
        if !commit.reshaped.isDisjoint(with: read) {
            tracker.state.needsRefetch(.schemaChanged)
            return
        }
        for oid in commit.truncated.intersection(read).sorted() {
            tracker.state.needsRefetch(.tableChanged(relations[oid]?.name ?? plan.name(of: oid)))
            return
        }
        for oid in plan.otherRelations.sorted() where commit.touched[oid] != nil {
            tracker.state.needsRefetch(.tableChanged(relations[oid]?.name ?? plan.name(of: oid)))
            return
        }
        if let reason = plan.refetchReason {
            tracker.state.needsRefetch(reason)
            return
        }
        let base = plan.roles[0].table
        if let tuples = commit.touched[base.oid] {
            for tuple in tuples {
                // By the key: the identity may be another column, which a delete does not carry.
                guard let key = Self.key(of: tuple, in: relations[base.oid], column: plan.key) else {
                    tracker.state.needsRefetch(.undescribedChanges)
                    return
                }
                let row = keys.rowKey(for: key)
                entry.rows.insert(row)
                guard tracker.state.touched(row) else { return }
            }
        }
        // Joined and aggregated tables' changed keys: resolved to the rows they reach when applied.
        let lookedUp = plan.joins.map { ($0.role, $0.key) } + plan.children.map { ($0.role, $0.key) }
        for (role, key) in lookedUp {
            guard noteLookups(role: role, key: key, of: commit, relations, into: &entry) else { return }
        }
    }

    /// Notes the keys `commit` changed in `role`'s table for the lookup that resolves them;
    /// `false` when the query refetches instead (a change without its key, or too many of them).
    func noteLookups(role: Int, key column: PostgresTable.Column, of commit: DecodedCommit, _ relations: KnownRelations,
                             into entry: inout AbsorbedCommit) -> Bool {
        let table = plan.roles[role].table
        guard let tuples = commit.touched[table.oid] else { return true }
        for tuple in tuples {
            guard let key = Self.key(of: tuple, in: relations[table.oid], column: column) else {
                tracker.state.needsRefetch(.undescribedChanges)
                return false
            }
            entry.lookups[role, default: []].insert(Self.text(of: key))
        }
        let pending = absorbed.reduce(entry.lookups[role]?.count ?? 0) { $0 + ($1.lookups[role]?.count ?? 0) }
        guard pending <= refetchThreshold else {
            tracker.state.needsRefetch(.tooManyRowsChanged(threshold: refetchThreshold))
            return false
        }
        return true
    }

    /// The value of `column` (a key column) in a change's key tuple, as the index holds it.
    static func key(of tuple: [PostgresTupleValue], in relation: PostgresRelation?, column: PostgresTable.Column) -> SQLValue? {
        guard let relation else { return nil }
        let keyColumns = relation.columns.filter(\.isKey)
        guard keyColumns.count == tuple.count, let index = keyColumns.firstIndex(where: { $0.name == column.name }),
              case let .text(text) = tuple[index] else { return nil }
        return PostgresType.keyValue(text: text, oid: column.typeOID)
    }

    /// Adds to each commit the base rows that meet the joined rows it changed, read in the
    /// round's snapshot (each lookup returns the row and the link value that met it).
    func lookUpJoinedRows(_ commits: inout [AbsorbedCommit], _ session: PostgresSession,
                          _ cache: inout RoundLookups) async throws(PostgresLiveQueryError) {
        guard tracker.state.wantsRows else { return }
        for lookup in plan.joins {
            let byKey = Self.changedKeys(of: lookup.role, in: commits)
            guard !byKey.isEmpty else { continue }
            for row in try await cache.rows(lookup.sql, keys: byKey.keys.sorted(), session) {
                var cells = row.makeIterator()
                guard let cell = cells.next(), let link = cells.next()?.bytes.map({ String(buffer: $0) }) else { continue }
                let identity = PostgresType.value(cell.bytes, oid: UInt32(truncatingIfNeeded: cell.dataType.rawValue))
                let rowKey = keys.rowKey(for: identity)
                // A link whose text differs from the change's (numeric scale) is put on every commit
                // that changed the role's rows: the steps then keep those commits together.
                for index in byKey[link] ?? Array(Set(byKey.values.joined())) { commits[index].rows.insert(rowKey) }
                guard tracker.state.touched(rowKey) else { return }
            }
        }
        try await lookUpGroups(&commits, session, &cache)
    }
}
