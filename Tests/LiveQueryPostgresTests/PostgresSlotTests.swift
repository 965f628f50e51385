import Foundation
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// A persistent slot invalidated for holding too much WAL (`max_slot_wal_keep_size`) is dropped and
    /// taken again when its instance comes back; what was committed meanwhile is read whole.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresSlotTests {
        @Test("a persistent slot invalidated by max_slot_wal_keep_size is replaced when its instance comes back, and the query equals the SELECT")
        func invalidatedSlot() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C");
                CREATE TABLE filler (id bigint PRIMARY KEY, payload text);
                INSERT INTO item SELECT g, 'n' || g FROM generate_series(1, 20) g
                """) { configuration, writer, _ in
                let slot = "livelist_keep_\(UInt32.random(in: 0...UInt32.max))"
                let first = try await PostgresLiveDatabase.connect(configuration, slot: .persistent(slot), logger: PG.logger)
                _ = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("name")]), in: first)
                await first.close()
                do {
                    try await PG.execute(writer, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
                    try await PG.execute(writer, "SELECT pg_reload_conf()")
                    // Committed while the instance is away, and WAL beyond the slot's allowance.
                    try await PG.execute(writer, "UPDATE item SET name = 'zz' WHERE id = 1")
                    // WAL and checkpoints until the checkpointer has invalidated the slot (the instance is
                    // away meanwhile: nothing reads the slot while it goes).
                    var status: [String] = []
                    for round in 0..<20 where status != ["lost"] {
                        try await PG.execute(writer, "INSERT INTO filler SELECT g + \(round * 20_000), repeat('x', 200) FROM generate_series(1, 20000) g")
                        try await PG.execute(writer, "SELECT pg_switch_wal()")
                        try await PG.execute(writer, "CHECKPOINT")
                        status = try await PG.strings(writer, "SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = '\(slot)'")
                    }
                    try #require(status == ["lost"], "the slot was invalidated")
                    let again = try await PostgresLiveDatabase.connect(configuration, slot: .persistent(slot), logger: PG.logger)
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("name")]),
                                                                 in: again)
                    try await PG.execute(writer, "UPDATE item SET name = 'a' WHERE id = 2")
                    let result = try await query.upToDate()
                    #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY name, id")))
                    let statuses = try await PG.strings(writer, "SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = '\(slot)'")
                    #expect(statuses.count == 1 && statuses != ["lost"], "a new slot under the same name: \(statuses)")
                    await again.close()
                } catch {
                    try? await PG.execute(writer, "ALTER SYSTEM RESET max_slot_wal_keep_size")
                    try? await PG.execute(writer, "SELECT pg_reload_conf()")
                    throw error
                }
                try await PG.execute(writer, "ALTER SYSTEM RESET max_slot_wal_keep_size")
                try await PG.execute(writer, "SELECT pg_reload_conf()")
                try await PG.execute(writer, "SELECT pg_drop_replication_slot('\(slot)')")
            }
        }
    }
}
