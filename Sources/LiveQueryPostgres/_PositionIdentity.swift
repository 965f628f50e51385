import Foundation

/// What names a database's commit positions: the cluster (its system identifier), its timeline
/// (a restore to a point in time or a promoted standby starts a new one, where positions repeat
/// with other commits) and the database. Versions of two servers over the same database compare
/// only under the same name. Read when the decoding connection opens.
///
/// `@unchecked Sendable`: `name` is only touched under `lock`.
final class _PositionIdentity: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = "pg"

    var name: String { lock.withLock { stored } }

    func read(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        guard let row = try await session.rows("""
            SELECT (SELECT system_identifier::text FROM pg_control_system()),
                   substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8),
                   (SELECT oid::int8 FROM pg_database WHERE datname = current_database())
            """).first else { return }
        let (system, timeline, database) = try _PostgresPlan.decode(row, as: (String?, String?, Int64?).self)
        let cluster = system.flatMap { UInt64($0) }.map { String($0, radix: 36) } ?? "0"
        let line = timeline.flatMap { UInt32($0, radix: 16) }.map { String($0, radix: 36) } ?? "0"
        let name = "pg" + cluster + "-" + line + "-" + String(database ?? 0, radix: 36)
        lock.withLock { stored = name }
    }
}
