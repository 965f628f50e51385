import ListDiff

/// What names a database's commit positions: the cluster (its system identifier), its timeline
/// (a restore to a point in time or a promoted standby starts a new one, where positions repeat
/// with other commits) and the database. Versions of two servers over the same database compare
/// only under the same name. Set when the replication stream's session starts (`IDENTIFY_SYSTEM`).
final class PositionIdentity: Sendable {
    private let stored = Locked("pg")

    var name: String {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }

    /// The name of the positions of `database` (its OID) on timeline `timeline` of the cluster `system`.
    static func name(system: UInt64, timeline: UInt32, database: Int64) -> String {
        "pg" + String(system, radix: 36) + "-" + String(timeline, radix: 36) + "-" + String(database, radix: 36)
    }
}
