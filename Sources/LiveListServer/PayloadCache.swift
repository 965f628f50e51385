import LiveListWire
import LiveQueryCore
import OrderedCollections

/// The contents of rows lately sent, by identity and content token, so that rows shared by many
/// windows and many commits are read and converted once. Bounded: past `capacity` rows the rows
/// kept longest go first, an eighth of the capacity at a time (the rows on screens, read again
/// with each commit that changes them, stay).
final class PayloadCache {
    let query: any ServedLiveQuery
    let capacity: Int
    /// In the order the rows were first kept (a changed row keeps its place).
    private var values: OrderedDictionary<SQLValue, (token: UInt64, values: [WireValue])> = [:]

    init(query: any ServedLiveQuery, capacity: Int) {
        self.query = query
        self.capacity = capacity
    }

    /// The rows at `positions` of `result`, with their content where it can be read exactly at
    /// the result's version (see ``ServedLiveQuery/values(of:)``); `nil` content otherwise. `failed`:
    /// the read failed, and its rows have no content though they may not change again.
    ///
    /// - Complexity: O(p log n) for p positions, plus one read for the rows not cached.
    func rows(at positions: Set<Int>, in result: LiveResult<SQLValue>) async -> (rows: [Int: WireRow], failed: Bool) {
        var rows: [Int: WireRow] = [:]
        var unread: [Int: LiveRow<SQLValue>] = [:]
        for position in positions {
            guard let row = result.row(at: position) else { continue }
            if let cached = values[row.id], cached.token == row.version {
                rows[position] = WireRow(position: position, id: row.id.wire, values: cached.values)
            } else {
                unread[position] = row
            }
        }
        guard !unread.isEmpty else { return (rows, false) }
        var read: [SQLValue: [SQLValue]] = [:]
        var failed = false
        do {
            read = try await query.values(of: Array(unread.values))
        } catch {
            failed = true
        }
        evict(toTake: read.count)
        for (position, row) in unread {
            let converted = read[row.id].map { $0.map(\.wire) }
            if let converted { values[row.id] = (row.version, converted) }
            rows[position] = WireRow(position: position, id: row.id.wire, values: converted)
        }
        return (rows, failed)
    }

    /// Makes room for `incoming` rows: the oldest go, at least an eighth of the capacity at once,
    /// so that removing from the front of the ordered keys — O(n) — is paid once per many rows.
    /// - Complexity: amortized O(1) per row kept.
    private func evict(toTake incoming: Int) {
        let excess = values.count + incoming - capacity
        guard excess > 0 else { return }
        values.removeFirst(min(values.count, max(excess, capacity / 8)))
    }

    /// Rows kept (the tests count them).
    var count: Int { values.count }
}
