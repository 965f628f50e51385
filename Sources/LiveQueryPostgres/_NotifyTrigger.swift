import PostgresNIO

/// The statement trigger that wakes live queries at once when a table they read commits
/// (``PostgresLiveDatabase/WakeUp/notify(fallback:)``): `AFTER INSERT OR UPDATE OR DELETE OR
/// TRUNCATE … FOR EACH STATEMENT`, calling a function in the table's schema that NOTIFYs one
/// channel. PostgreSQL delivers the notification when (and only if) the transaction commits, and
/// folds a transaction's notifications into one; the changes themselves still come from the slot.
enum _NotifyTrigger {
    static let channel = "livelist"
    static let name = "livelist_notify"

    /// Adds the function and the trigger to table `oid` unless it has them (another server over the
    /// same database may add them at the same time: that is not an error).
    static func install(on oid: UInt32, _ session: _PgSession) async throws(PostgresLiveQueryError) {
        var binds = PostgresBindings()
        binds.append(Int64(oid))
        binds.append(name)
        let found = try await session.rows("""
            SELECT n.nspname::text, c.relname::text, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = $2)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::int8::oid
            """, binds)
        guard let row = found.first else { return }
        let (schema, table, exists) = try _PostgresPlan.decode(row, as: (String, String, Bool).self)
        guard !exists else { return }
        let function = _PostgresPlan.quoted(schema) + "." + _PostgresPlan.quoted(name)
        let relation = _PostgresPlan.quoted(schema) + "." + _PostgresPlan.quoted(table)
        do throws(PostgresLiveQueryError) {
            try await session.execute("""
                CREATE OR REPLACE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS
                $livelist$ BEGIN PERFORM pg_notify('\(channel)', ''); RETURN NULL; END $livelist$
                """)
            try await session.execute("""
                CREATE OR REPLACE TRIGGER \(_PostgresPlan.quoted(name)) AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \(relation)
                FOR EACH STATEMENT EXECUTE FUNCTION \(function)()
                """)
        } catch {
            // 23505/XX000 "tuple concurrently updated": another server added it first.
            if error.sqlState == "23505" || error.sqlState == "XX000" { return }
            throw error
        }
    }
}
