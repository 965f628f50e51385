import LiveQueryCore
import PostgresNIO

/// A query grouped by its base table's key (`SELECT f.id, count(i.id) … GROUP BY f.id`) is followed
/// group by group: a commit that changes rows of an aggregated table re-reads the groups those rows
/// belong to now and belonged to before — each group read whole by its key, as a row is — so a
/// commit costs the groups it touched, not the whole aggregate.
extension PostgresQueryRunner {
    /// A key or group as text, as the change stream and ``PostgresQueryRunner/text(of:)`` write it.
    private static func canonical(_ text: String, oid: UInt32) -> String {
        PostgresType.keyValue(text: Array(text.utf8), oid: oid).map(Self.text(of:)) ?? text
    }

    /// Adds to each commit the groups its changed aggregated rows belong to now (read in the
    /// round's snapshot) and belonged to before (kept in ``childLinks``); moves them there.
    func lookUpGroups(_ commits: inout [AbsorbedCommit], _ session: PostgresSession, _ cache: inout RoundLookups) async throws(PostgresLiveQueryError) {
        for child in plan.children {
            let byKey = Self.changedKeys(of: child.role, in: commits)
            guard !byKey.isEmpty else { continue }
            var now: [String: String] = [:]
            for keys in PostgresRows.chunks(byKey.keys.sorted()) {
                for row in try await cache.rows(child.changedSQL, keys: keys, session) {
                    let (key, group) = try Self.link(row)
                    if let group { now[Self.canonical(key, oid: child.key.typeOID)] = Self.canonical(group, oid: plan.identity.typeOID) }
                }
            }
            var links = childLinks[child.role] ?? ChildLinks()
            defer { childLinks[child.role] = links }
            for (key, indices) in byKey {
                let group = now[key]
                let before = links.move(key, to: group)
                for touched in Set([before, group].compactMap { $0 }) {
                    guard let identity = PostgresType.keyValue(text: Array(touched.utf8), oid: plan.identity.typeOID) else { continue }
                    let rowKey = keys.rowKey(for: identity)
                    for index in indices { commits[index].rows.insert(rowKey) }
                    // Past the threshold the tracker refetches, and the links are read again with it.
                    guard tracker.state.touched(rowKey) else { return }
                }
            }
        }
    }

    /// After the groups `rows` were re-read: the rows of groups that entered the result are read
    /// (in the round's snapshot); those of groups not in it are no longer kept.
    func settleGroups(_ rows: Set<Int64>, heldBefore: Set<Int64>, _ session: PostgresSession) async throws(PostgresLiveQueryError) {
        var entered: [SQLValue] = []
        for row in rows {
            guard let identity = keys.value(of: row) else { continue }
            if tracker.index.entry(forRowid: row) == nil {
                for child in plan.children { childLinks[child.role]?.drop(group: Self.text(of: identity)) }
            } else if !heldBefore.contains(row) {
                entered.append(identity)
            }
        }
        guard !entered.isEmpty else { return }
        for (role, links) in try await Self.childLinks(plan, groups: entered, session) {
            var kept = childLinks[role] ?? ChildLinks()
            kept.absorb(links)
            childLinks[role] = kept
        }
    }

    /// The rows of `groups` in each aggregated table, read now.
    /// - Complexity: one statement per table and 5,000 groups; O(rows of the groups).
    static func childLinks(_ plan: PostgresPlan, groups: [SQLValue], _ session: PostgresSession) async throws(PostgresLiveQueryError) -> [Int: ChildLinks] {
        var all: [Int: ChildLinks] = [:]
        guard !plan.children.isEmpty else { return all }
        let texts = groups.map(Self.text(of:))
        for child in plan.children {
            var links = ChildLinks()
            for chunk in PostgresRows.chunks(texts) {
                for row in try await session.submit(prepared: child.groupsSQL, StatementParameters(texts: chunk), { $0 }).value() {
                    let (key, group) = try Self.link(row)
                    if let group { links.move(canonical(key, oid: child.key.typeOID), to: canonical(group, oid: plan.identity.typeOID)) }
                }
            }
            all[child.role] = links
        }
        return all
    }

    /// A row of a child lookup: the child's key and the group it belongs to (NULL: none), both
    /// text. Read by their bytes: the lookups run prepared (``PostgresSession/submit(prepared:_:_:)``).
    static func link(_ row: PostgresRow) throws(PostgresLiveQueryError) -> (key: String, group: String?) {
        var cells = row.makeIterator()
        guard let key = cells.next()?.bytes, let group = cells.next() else { throw .malformedChange("a child lookup's row") }
        return (String(buffer: key), group.bytes.map { String(buffer: $0) })
    }
}
