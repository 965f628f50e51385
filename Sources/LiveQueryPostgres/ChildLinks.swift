/// For a query grouped by its base table's key, the group each row of an aggregated table belongs
/// to — for the rows of the groups the result holds. A change to such a row names only the row
/// (PostgreSQL's change stream carries no old values but the key), and the row's group now is read
/// in the round's snapshot; the group it belonged to before is here. A group that enters the result
/// has its rows added (read in the snapshot it entered in); one that leaves has them dropped.
///
/// A value, tested without a database (`ChildLinksTests`).
struct ChildLinks: Sendable, Equatable {
    /// Each row's group (both as text, as PostgreSQL writes them).
    private var groupOf: [String: String] = [:]
    private var rowsOf: [String: Set<String>] = [:]

    /// How many rows are kept.
    var count: Int { groupOf.count }

    /// The group `row` belonged to, as far as it is kept.
    func group(of row: String) -> String? { groupOf[row] }

    /// `row` belongs to `group` now (`nil`: to none — deleted, or its link is NULL). Returns the
    /// group it belonged to before, as far as it was kept.
    /// - Complexity: O(1) amortized.
    @discardableResult
    mutating func move(_ row: String, to group: String?) -> String? {
        let old = groupOf[row]
        if let old, old != group {
            rowsOf[old]?.remove(row)
            if rowsOf[old]?.isEmpty == true { rowsOf[old] = nil }
        }
        groupOf[row] = group
        if let group { rowsOf[group, default: []].insert(row) }
        return old
    }

    /// The group left the result: its rows are no longer kept.
    /// - Complexity: O(rows of the group).
    mutating func drop(group: String) {
        guard let rows = rowsOf.removeValue(forKey: group) else { return }
        for row in rows where groupOf[row] == group { groupOf[row] = nil }
    }

    /// Adds the rows `other` keeps, in the groups it keeps them in.
    /// - Complexity: O(rows of `other`).
    mutating func absorb(_ other: ChildLinks) {
        for (row, group) in other.groupOf { move(row, to: group) }
    }
}
