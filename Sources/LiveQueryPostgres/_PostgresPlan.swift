import LiveQuery
import PostgresNIO

/// How one request is read and kept: its table and columns as the catalog describes them, the
/// SQL that reads the result or some of its rows, the index's layout, and whether commits are
/// applied row by row or refetch (and why). Built from the catalog when the query opens.
struct _PostgresPlan: Sendable {
    struct Column: Sendable {
        var name: String
        var typeOID: UInt32
        var typeName: String
        /// The collation's `collcollate` and provider (`c` libc, `i` ICU, `d` the database's).
        var collation: String?
        var collationName: String?
        var provider: String?
    }

    var relationOID: UInt32
    var qualifiedName: String
    var identity: Column
    /// Whether the identity is an integer used as the index's row key (else a row key is
    /// assigned per identity and the identity ends the sort key).
    var identityIsRowKey: Bool
    var sortColumns: [Column]
    var layout: _ResultLayout
    /// The refetch reason when the order cannot be kept here; `nil`: incremental.
    var refetchReason: RefetchReason?
    var fetchSQL: String
    /// `fetchSQL`'s filter with `AND identity = ANY($k)`: the rows among some identities.
    var rereadSQL: String
    var arguments: PostgresBindings
    /// Tables besides the base table the filter reads (their changes refetch).
    var otherRelations: Set<UInt32>
    var hasVersionColumn: Bool
    /// Columns before the content: identity, sort values.
    var keyColumnCount: Int { 1 + sortColumns.count }
    /// Every table the query reads.
    var relationsRead: Set<UInt32> { otherRelations.union([relationOID]) }

    /// A table the query reads, as errors name it.
    func name(of oid: UInt32) -> String { oid == relationOID ? qualifiedName : "table \(oid)" }

    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func make<ID: LiveIdentity>(_ request: PostgresLiveQueryRequest<ID>, _ session: _PgSession)
        async throws(PostgresLiveQueryError) -> _PostgresPlan {
        var binds = PostgresBindings()
        binds.append(request.table)
        let found = try await session.rows("""
            SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)
            """, binds)
        guard let relation = found.first else { throw .unknownTable(request.table) }
        let (oid, schema, name, kind) = try decode(relation, as: (Int64, String, String, String).self)
        guard kind == "r" || kind == "p" else { throw .unknownTable(request.table) }
        let qualified = quoted(schema) + "." + quoted(name)
        var oidBinds = PostgresBindings()
        oidBinds.append(oid)
        var databaseCollation = "", databaseProvider = "c"
        if let row = try await session.rows("SELECT datcollate::text, datlocprovider::text FROM pg_database WHERE datname = current_database()").first {
            (databaseCollation, databaseProvider) = try decode(row, as: (String, String).self)
        }
        var columns: [String: Column] = [:]
        for row in try await session.rows("""
            SELECT a.attname::text, a.atttypid::int8, format_type(a.atttypid, a.atttypmod), co.collname::text, co.collcollate::text, co.collprovider::text
            FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation
            WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
            """, oidBinds) {
            let (column, type, typeName, collName, collate, provider) = try decode(row, as: (String, Int64, String, String?, String?, String?).self)
            var info = Column(name: column, typeOID: UInt32(truncatingIfNeeded: type), typeName: typeName,
                              collation: collate, collationName: collName, provider: provider)
            if collName == "default" {
                info.collation = databaseCollation
                info.provider = databaseProvider
            }
            columns[column] = info
        }
        let keys = try await session.rows("""
            SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = $1::int8::oid AND i.indisprimary
            """, oidBinds).map { row throws(PostgresLiveQueryError) in try decode(row, as: String.self) }
        guard keys.count == 1, let identity = columns[keys[0]], request.identity.map({ $0 == keys[0] }) ?? true else {
            throw .identityNotPrimaryKey(table: request.table, identity: request.identity)
        }
        func column(_ name: String) throws(PostgresLiveQueryError) -> Column {
            guard let column = columns[name] else { throw .unknownColumn(table: request.table, column: name) }
            return column
        }
        let sortColumns = try request.sort.map { term throws(PostgresLiveQueryError) in try column(term.column) }
        if let section = request.section, request.sort.first?.column != section { throw .sectionNotFirstSortTerm(section) }
        if let version = request.version { _ = try column(version) }
        guard let identityType = _PgType(oid: identity.typeOID), [.integer, .text, .uuid].contains(identityType) else {
            throw .identityNotPrimaryKey(table: request.table, identity: identity.name + " (of type \(identity.typeName))")
        }
        if identityType == .integer ? !ID.decodes(.integer) : !ID.decodes(.text) {
            throw .identityTypeMismatch(column: identity.name, declared: "\(ID.self)")
        }

        // The order: every term compared here exactly as PostgreSQL does, or the server orders.
        var reason: RefetchReason?
        var rules: [_PostgresOrdering.Rule] = []
        for (term, info) in zip(request.sort, sortColumns) {
            let descending = term.direction == .descending
            let rule = _PostgresOrdering.Rule(comparison: _PgType(oid: info.typeOID)?.comparison ?? .bytes, descending: descending,
                                              nullsFirst: term.nulls.map { $0 == .first } ?? descending)
            rules.append(rule)
            guard let type = _PgType(oid: info.typeOID) else {
                reason = reason ?? .request([.orderByType(column: info.name, type: info.typeName)])
                continue
            }
            if type.isCollatable, !Self.comparesByBytes(info) {
                reason = reason ?? .request([.customCollation((info.collationName ?? "") + " (" + (info.collation ?? "") + ")")])
            }
        }
        let identityIsRowKey = identityType == .integer && reason == nil
        let identityRule = _PostgresOrdering.Rule(comparison: identityType.comparison, descending: false, nullsFirst: false)
        let sectionRule = request.section != nil ? rules.first : nil
        let layout: _ResultLayout = if reason == nil {
            _ResultLayout(ordering: _PostgresOrdering(rules: identityIsRowKey ? rules : rules + [identityRule]),
                          identityIsRowid: identityIsRowKey, sections: sectionRule, sectionsArePositional: false)
        } else {
            _ResultLayout(ordering: _FetchOrder(), identityIsRowid: false, sections: sectionRule, sectionsArePositional: true)
        }

        let id = "t." + quoted(identity.name)
        let order = zip(request.sort, sortColumns).map { term, info in
            "t." + quoted(info.name) + (term.direction == .descending ? " DESC" : " ASC")
                + (term.nulls.map { $0 == .first ? " NULLS FIRST" : " NULLS LAST" } ?? "")
        } + [id + " ASC"]
        let content = request.version.map { "t." + quoted($0) } ?? "t.*"
        let select = "SELECT " + ([id] + sortColumns.map { "t." + quoted($0.name) } + [content]).joined(separator: ", ")
            + " FROM " + qualified + " t"
        let filter = request.filter.map { "(" + $0 + ")" } ?? "true"
        let argumentCount = request.arguments.count
        let plan = _PostgresPlan(
            relationOID: UInt32(truncatingIfNeeded: oid), qualifiedName: qualified, identity: identity, identityIsRowKey: identityIsRowKey,
            sortColumns: sortColumns, layout: layout, refetchReason: reason,
            fetchSQL: select + " WHERE " + filter + " ORDER BY " + order.joined(separator: ", "),
            rereadSQL: select + " WHERE " + filter + " AND " + id + " = ANY(CAST($\(argumentCount + 1) AS text[])::" + identity.typeName + "[])",
            arguments: request.arguments, otherRelations: [], hasVersionColumn: request.version != nil)
        var planned = plan
        planned.otherRelations = try await plan.relationsRead(session).subtracting([plan.relationOID])
        return planned
    }

    /// Text compared by bytes: the C and POSIX collations (libc or the database's) and ucs_basic.
    static func comparesByBytes(_ column: Column) -> Bool {
        if column.collationName == "C" || column.collationName == "POSIX" || column.collationName == "ucs_basic" { return true }
        guard column.provider != "i" else { return false }
        return column.collation == "C" || column.collation == "POSIX"
    }

    /// The tables the fetch reads, from the server's own plan: a filter's subqueries name others.
    func relationsRead(_ session: _PgSession) async throws(PostgresLiveQueryError) -> Set<UInt32> {
        let rows = try await session.rows("EXPLAIN (FORMAT JSON, COSTS OFF, VERBOSE) " + fetchSQL, arguments)
        guard let json = rows.first?.first(where: { _ in true })?.bytes.map({ String(buffer: $0) }) else { return [] }
        var names: Set<String> = []
        var rest = json[...]
        // "Relation Name": "t", "Schema": "s" — VERBOSE names both for every scan.
        while let range = rest.range(of: "\"Relation Name\": \"") {
            let tail = rest[range.upperBound...]
            guard let end = tail.firstIndex(of: "\"") else { break }
            let relation = String(tail[..<end])
            var schema = "public"
            if let schemaRange = tail.range(of: "\"Schema\": \""), let schemaEnd = tail[schemaRange.upperBound...].firstIndex(of: "\"") {
                schema = String(tail[schemaRange.upperBound..<schemaEnd])
            }
            names.insert(Self.quoted(schema) + "." + Self.quoted(relation))
            rest = tail[end...]
        }
        guard !names.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(Array(names))
        var oids: Set<UInt32> = []
        for row in try await session.rows("SELECT to_regclass(name)::oid::int8 FROM unnest($1::text[]) AS name", binds) {
            if let oid = try Self.decode(row, as: Int64?.self) { oids.insert(UInt32(truncatingIfNeeded: oid)) }
        }
        return oids
    }

    static func decode<T: PostgresDecodable>(_ row: PostgresRow, as type: T.Type) throws(PostgresLiveQueryError) -> T {
        do { return try row.decode(T.self) } catch { throw .underlying(error) }
    }

    static func decode<each T: PostgresDecodable>(_ row: PostgresRow, as types: (repeat each T).Type) throws(PostgresLiveQueryError) -> (repeat each T) {
        do { return try row.decode(types) } catch { throw .underlying(error) }
    }
}
