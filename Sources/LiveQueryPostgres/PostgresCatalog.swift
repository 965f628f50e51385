import PostgresNIO

/// A table as the catalog describes it: its columns (type, collation) and primary key.
struct PostgresTable: Sendable {
    struct Column: Sendable, Equatable {
        var name: String
        var attnum: Int
        var typeOID: UInt32
        var typeName: String
        /// The collation's `collcollate` and provider (`c` libc, `i` ICU, `d` the database's).
        var collation: String?
        var collationName: String?
        var provider: String?
        /// A generated column: the change stream leaves it out.
        var isGenerated = false
        /// Declared NOT NULL.
        var isNotNull = false
    }

    var oid: UInt32
    var schema: String
    var name: String
    /// `r` table, `p` partitioned table, `v` view, `m` materialized view, `f` foreign table.
    var kind: String
    var columns: [String: Column]
    var primaryKey: [String]
    /// The columns that begin an index (first key column), by attnum: where a lookup by value is cheap.
    var indexedColumns: Set<Int>
    /// The columns with a valid unique index on them alone (no expression, no WHERE), by attnum:
    /// those NOT NULL hold a different value in every row, so they may identify the table's rows.
    var uniqueColumns: Set<Int> = []
    /// The columns its changes name a row by (its replica identity: the primary key by default,
    /// every column with FULL, an index's columns), by attnum.
    var identityColumns: Set<Int>

    /// The table as `pgoutput` describes it (columns in order, replica identity flagged): what a
    /// relation message in the change stream must equal while its shape stays as planned.
    var relation: PostgresRelation {
        let ordered = columns.values.filter { !$0.isGenerated }.sorted { $0.attnum < $1.attnum }
        return PostgresRelation(oid: oid, schema: schema, name: name, columns: ordered.map {
            PostgresRelation.Column(name: $0.name, isKey: identityColumns.contains($0.attnum), typeOID: $0.typeOID)
        })
    }

    var qualifiedName: String { PostgresPlan.quoted(schema) + "." + PostgresPlan.quoted(name) }

    /// The single-column primary key, when the table has one.
    var key: Column? { primaryKey.count == 1 ? columns[primaryKey[0]] : nil }

    /// Whether `column` holds a different value in every row, never NULL: the single-column
    /// primary key, or a NOT NULL column with a unique index on it alone — what may identify rows,
    /// as over SQLite (where NULL identities are left out instead).
    func identifies(_ column: Column) -> Bool {
        key?.name == column.name || (column.isNotNull && uniqueColumns.contains(column.attnum))
    }

    /// What would let `column` identify the table's rows, said as the statements that do it.
    func uniquenessFix(for column: Column) -> String {
        let name = PostgresPlan.quoted(column.name)
        let index = uniqueColumns.contains(column.attnum) ? nil : "CREATE UNIQUE INDEX ON \(qualifiedName) (\(name))"
        let notNull = column.isNotNull ? nil : "ALTER TABLE \(qualifiedName) ALTER COLUMN \(name) SET NOT NULL"
        return [index, notNull].compactMap { $0 }.joined(separator: " and ")
    }
}

enum PostgresCatalog {
    /// The table `name` resolves to (with the connection's search path), or `nil`.
    static func table(named name: String, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> PostgresTable? {
        var binds = PostgresBindings()
        binds.append(name)
        let found = try await session.rows("SELECT to_regclass($1)::oid::int8", binds)
        guard let row = found.first, let oid = try PostgresPlan.decode(row, as: Int64?.self) else { return nil }
        return try await table(oid: UInt32(truncatingIfNeeded: oid), session)
    }

    /// The table of `oid`, or `nil`.
    static func table(oid: UInt32, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> PostgresTable? {
        var binds = PostgresBindings()
        binds.append(Int64(oid))
        let found = try await session.rows("""
            SELECT n.nspname::text, c.relname::text, c.relkind::text,
                   (SELECT datcollate::text FROM pg_database WHERE datname = current_database()),
                   (SELECT coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') FROM pg_database d WHERE datname = current_database()),
                   coalesce((SELECT array_agg(a.attname::text ORDER BY array_position(i.indkey, a.attnum))
                             FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                             WHERE i.indrelid = c.oid AND i.indisprimary), '{}'),
                   coalesce((SELECT array_agg(DISTINCT i.indkey[0]::int8) FROM pg_index i WHERE i.indrelid = c.oid), '{}'),
                   coalesce((SELECT array_agg(DISTINCT i.indkey[0]::int8) FROM pg_index i
                             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                             WHERE i.indrelid = c.oid AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1
                               AND i.indexprs IS NULL AND i.indpred IS NULL), '{}'),
                   coalesce(CASE c.relreplident
                       WHEN 'f' THEN (SELECT array_agg(a.attnum::int8) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
                       WHEN 'n' THEN '{}'
                       WHEN 'i' THEN (SELECT array_agg(k::int8) FROM pg_index i, unnest(i.indkey) k WHERE i.indrelid = c.oid AND i.indisreplident)
                       ELSE (SELECT array_agg(k::int8) FROM pg_index i, unnest(i.indkey) k WHERE i.indrelid = c.oid AND i.indisprimary) END, '{}')
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::int8::oid
            """, binds)
        guard let relation = found.first else { return nil }
        let (schema, name, kind, databaseCollation, databaseProvider, primaryKey, indexed, unique, identity) = try PostgresPlan.decode(
            relation, as: (String, String, String, String?, String?, [String], [Int64], [Int64], [Int64]).self)
        var columns: [String: PostgresTable.Column] = [:]
        for row in try await session.rows("""
            SELECT a.attname::text, a.attnum::int8, a.atttypid::int8, format_type(a.atttypid, a.atttypmod), co.collname::text,
                   \(locale), co.collprovider::text, a.attgenerated::text <> '', a.attnotnull
            FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation
            WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
            """, binds) {
            let (column, attnum, type, typeName, collationName, collate, provider, generated, notNull) = try PostgresPlan.decode(
                row, as: (String, Int64, Int64, String, String?, String?, String?, Bool, Bool).self)
            var info = PostgresTable.Column(name: column, attnum: Int(attnum), typeOID: UInt32(truncatingIfNeeded: type), typeName: typeName,
                                       collation: collate, collationName: collationName, provider: provider, isGenerated: generated,
                                       isNotNull: notNull)
            if collationName == "default" {
                info.collation = databaseCollation
                info.provider = databaseProvider
            }
            columns[column] = info
        }
        return PostgresTable(oid: oid, schema: schema, name: name, kind: kind, columns: columns, primaryKey: primaryKey,
                        indexedColumns: Set(indexed.map(Int.init)), uniqueColumns: Set(unique.map(Int.init)),
                        identityColumns: Set(identity.map(Int.init)))
    }

    /// A collation's locale: an ICU collation keeps it apart from `collcollate` (in `colliculocale`
    /// on PostgreSQL 15 and 16, `colllocale` from 17), read whichever the server has.
    private static let locale = "coalesce(to_jsonb(co) ->> 'colllocale', to_jsonb(co) ->> 'colliculocale', co.collcollate::text)"

    /// The database's default collation: its `datcollate` and provider.
    static func databaseCollation(_ session: PostgresSession) async throws(PostgresLiveQueryError) -> (collate: String?, provider: String?) {
        guard let row = try await session.rows("""
            SELECT datcollate::text, coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') FROM pg_database d WHERE datname = current_database()
            """).first else { return (nil, nil) }
        return try PostgresPlan.decode(row, as: (String?, String?).self)
    }

    /// The collation `name` (as ORDER BY … COLLATE names it): its `collcollate` and provider.
    static func collation(named name: String, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> (collate: String?, provider: String?) {
        var binds = PostgresBindings()
        binds.append(name)
        guard let row = try await session.rows("""
            SELECT \(locale), co.collprovider::text FROM pg_collation co WHERE co.collname = $1
            ORDER BY co.collnamespace = 'pg_catalog'::regnamespace DESC LIMIT 1
            """, binds).first else { return (nil, nil) }
        return try PostgresPlan.decode(row, as: (String?, String?).self)
    }
}
