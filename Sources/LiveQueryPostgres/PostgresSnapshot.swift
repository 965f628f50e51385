/// Which transactions a REPEATABLE READ snapshot sees (`pg_current_snapshot()`): the changes of a
/// committed transaction are applied to a live query only together with a read that sees them,
/// so each update equals the query's result in one snapshot.
struct PostgresSnapshot: Equatable, Sendable {
    var xmin: UInt64
    var xmax: UInt64
    var inProgress: Set<UInt64>

    /// Parses `pg_snapshot`'s text form, `xmin:xmax:xip,xip…`.
    init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let xmin = UInt64(parts[0]), let xmax = UInt64(parts[1]) else { return nil }
        var running: Set<UInt64> = []
        for part in parts[2].split(separator: ",") {
            guard let xid = UInt64(part) else { return nil }
            running.insert(xid)
        }
        self.xmin = xmin
        self.xmax = xmax
        inProgress = running
    }

    /// Whether a committed transaction, known by its 32-bit xid (as logical decoding gives it),
    /// is visible. The xid is placed relative to `xmax` as PostgreSQL compares xids (modulo 2³²,
    /// within 2³¹ either way): at or past `xmax` it started after the snapshot.
    func sees(committed xid: UInt32) -> Bool {
        let distance = Int64(Int32(bitPattern: xid &- UInt32(truncatingIfNeeded: xmax)))
        guard distance < 0 else { return false }
        let full = UInt64(Int64(xmax) + distance)
        return full < xmin || !inProgress.contains(full)
    }
}
