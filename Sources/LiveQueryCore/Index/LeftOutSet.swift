/// The rows a result index leaves out, remembered with their entries so that a row whose
/// identity becomes unique again (the row holding it left) can enter the list at that commit.
/// Kept beside the index and changed under its lock.
struct LeftOutSet: Sendable {
    private struct Duplicate: Sendable {
        var entry: IndexEntry
        var identity: SQLValue
    }

    /// rowid → a row whose canonical identity another indexed row holds.
    private var duplicates: [Int64: Duplicate] = [:]
    /// canonical identity → the left-out rows that hold it.
    private var duplicatesByIdentity: [SQLValue: Set<Int64>] = [:]
    /// rowid → a row whose identity does not decode.
    private var invalid: [Int64: IndexEntry] = [:]

    var isEmpty: Bool { duplicates.isEmpty && invalid.isEmpty }

    mutating func insertDuplicate(_ entry: IndexEntry, identity: SQLValue) {
        remove(entry.rowid)
        duplicates[entry.rowid] = Duplicate(entry: entry, identity: identity)
        duplicatesByIdentity[identity, default: []].insert(entry.rowid)
    }

    mutating func insertInvalid(_ entry: IndexEntry) {
        remove(entry.rowid)
        invalid[entry.rowid] = entry
    }

    /// Forgets `rowid` (it was re-read: it is classified again). O(1).
    mutating func remove(_ rowid: Int64) {
        invalid[rowid] = nil
        guard let duplicate = duplicates.removeValue(forKey: rowid) else { return }
        duplicatesByIdentity[duplicate.identity]?.remove(rowid)
        if duplicatesByIdentity[duplicate.identity]?.isEmpty == true { duplicatesByIdentity[duplicate.identity] = nil }
    }

    /// Takes out the left-out row with canonical `identity` that comes first in `order`, if any:
    /// the row that now enters the list. O(k) for k rows sharing the identity.
    mutating func takeFirst(withIdentity identity: SQLValue, order: RowOrder) -> IndexEntry? {
        guard let rowids = duplicatesByIdentity[identity] else { return nil }
        var best: IndexEntry?
        for rowid in rowids {
            guard let entry = duplicates[rowid]?.entry else { continue }
            if let current = best, order.compare(current, entry) <= 0 { continue }
            best = entry
        }
        if let best { remove(best.rowid) }
        return best
    }

    /// Up to `limit` identity values of rows left out as invalid that satisfy `predicate`. O(rows
    /// left out): for the check at open.
    func invalidIdentities(layout: ResultLayout, limit: Int, where predicate: (SQLValue) -> Bool) -> [SQLValue] {
        var found: [SQLValue] = []
        for entry in invalid.values where found.count < limit {
            let value = layout.identity(of: entry)
            if predicate(value) { found.append(value) }
        }
        return found
    }

    /// The public summary, with a few stored identity values of each kind.
    func summary(layout: ResultLayout, identityType: String) -> LeftOutRows {
        guard !isEmpty else { return .none(identityType: identityType) }
        let limit = LeftOutRows.exampleLimit
        return LeftOutRows(
            duplicateIdentities: .init(count: duplicates.count, examples: duplicates.values.prefix(limit).map { layout.identity(of: $0.entry) }),
            invalidIdentities: .init(count: invalid.count, examples: invalid.values.prefix(limit).map { layout.identity(of: $0) }),
            identityType: identityType)
    }
}
