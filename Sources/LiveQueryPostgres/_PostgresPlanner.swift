import LiveQuery
import PostgresNIO

/// Makes a request's plan (``_PostgresPlan``): reads the SELECT, has the server check it and name
/// its columns, resolves its tables, joins and sort terms against the catalog, and decides whether
/// it is followed row by row or refetched — every shape it cannot follow row by row adds a reason.
struct _PostgresPlanner<ID: LiveIdentity> {
    typealias Column = _PgTable.Column
    typealias Role = _PostgresPlan.Role

    let request: PostgresLiveQueryRequest<ID>
    let session: _PgSession
    /// Whether the publication sends a partitioned table's changes under its own name.
    let publishesViaRoot: Bool

    /// A resolved ORDER BY term.
    struct Term {
        var role: Int
        var column: Column
        var rule: _PostgresOrdering.Rule
        /// As the statements write it.
        var sql: String
        var collation: String?
        var parsed: _PgParsedSelect.OrderTerm
    }

    static func quoted(_ identifier: String) -> String { _PostgresPlan.quoted(identifier) }

    static func make(_ request: PostgresLiveQueryRequest<ID>, publishesViaRoot: Bool, _ session: _PgSession)
        async throws(PostgresLiveQueryError) -> _PostgresPlan {
        try await _PostgresPlanner(request: request, session: session, publishesViaRoot: publishesViaRoot).plan()
    }

    // MARK: - The SELECT

    /// The request as SQL, with its identity, section and version as the SELECT names them.
    private func lowered() async throws(PostgresLiveQueryError) -> (sql: String, identity: String?, section: String?, version: String?) {
        if let sql = request.sql { return (Self.withoutTrailingSemicolons(sql), request.identity, request.section, request.version) }
        guard let table = try await _PgCatalog.table(named: request.table, session), table.kind == "r" || table.kind == "p" else {
            throw .unknownTable(request.table)
        }
        func column(_ name: String) throws(PostgresLiveQueryError) -> String {
            guard table.columns[name] != nil else { throw .unknownColumn(table: request.table, column: name) }
            return Self.quoted(name)
        }
        guard let key = table.key, request.identity.map({ $0 == key.name }) ?? true else {
            throw .identityNotPrimaryKey(table: request.table, identity: request.identity)
        }
        let order = try request.sort.map { term throws(PostgresLiveQueryError) in
            try column(term.column) + (term.collation.map { " COLLATE " + Self.quoted(Self.postgresCollation($0)) } ?? "")
                + (term.direction == .descending ? " DESC" : " ASC")
                + (term.nulls.map { $0 == .first ? " NULLS FIRST" : " NULLS LAST" } ?? "")
        }
        if let section = request.section, request.sort.first?.column != section { throw .sectionNotFirstSortTerm(section) }
        let version = try request.version.map { name throws(PostgresLiveQueryError) in try column(name) }
        let sql = "SELECT * FROM " + table.qualifiedName + (request.filter.map { " WHERE (" + $0 + ")" } ?? "")
            + (order.isEmpty ? "" : " ORDER BY " + order.joined(separator: ", "))
        return (sql, Self.quoted(key.name), request.section.map(Self.quoted), version)
    }

    /// A sort term's collation as PostgreSQL names it: bytes are "C"; others by their name (SQLite's
    /// NOCASE and RTRIM are not PostgreSQL's, which says so when the query opens).
    private static func postgresCollation(_ collation: SortTerm.Collation) -> String {
        switch collation {
        case .binary: "C"
        case .nocase: "nocase"
        case .rtrim: "rtrim"
        case let .custom(name): name
        }
    }

    /// `sql` without the semicolons (and blanks, and comments) that end it: the statements wrap it.
    static func withoutTrailingSemicolons(_ sql: String) -> String {
        guard var tokens = try? _PgSQLTokenizer.tokens(sql), tokens.last?.isPunctuation == ";" else { return sql }
        while tokens.last?.isPunctuation == ";" { tokens.removeLast() }
        guard let last = tokens.last else { return "" }
        return String(decoding: Array(sql.utf8)[..<last.range.upperBound], as: UTF8.self)
    }

    /// The SELECT's column names and types, from the server — which checks the SELECT, so a
    /// mistake is its error, with its SQLSTATE. It reads no row.
    private func describe(_ sql: String) async throws(PostgresLiveQueryError) -> [(name: String, type: UInt32)] {
        let rows = try await session.rows("SELECT livelist_q.* FROM (" + sql + "\n) AS livelist_q RIGHT JOIN (SELECT) AS livelist_one ON false",
                                          request.arguments)
        guard let row = rows.first else { return [] }
        return row.map { ($0.columnName, UInt32(truncatingIfNeeded: $0.dataType.rawValue)) }
    }

    // MARK: - The plan

    private func plan() async throws(PostgresLiveQueryError) -> _PostgresPlan {
        let (sql, identityText, sectionText, versionText) = try await lowered()
        let parsed = _PgSelectParser.parse(sql)
        if parsed.shapes.contains(.unreadableSQL) || parsed.shapes.contains(.emptySQL) {
            // The server's own words for what it cannot read either.
            _ = try await describe(sql)
        }
        let columns = try await describe(sql)
        var shapes = parsed.shapes
        var roles: [Role] = []
        if let base = parsed.base {
            for reference in [base] + parsed.joins.map(\.table) {
                guard let table = try await _PgCatalog.table(named: reference.text, session) else { throw .unknownTable(reference.text) }
                if table.kind == "p", !publishesViaRoot { throw .partitionsNotPublishedViaRoot(table: table.qualifiedName) }
                if !(table.kind == "r" || table.kind == "p") { shapes.append(.viewOrVirtualTable(table.qualifiedName)) }
                roles.append(Role(table: table, qualifier: reference.qualifier))
            }
        }
        shapes += try await functionShapes(parsed)

        var incremental: Incremental?
        if shapes.isEmpty, let base = roles.first {
            if base.table.key == nil {
                shapes.append(.noSingleColumnKey(base.table.qualifiedName))
            } else {
                incremental = try await self.incremental(parsed, roles: roles, columns: columns, identity: identityText, section: sectionText,
                                                         shapes: &shapes)
            }
        }
        var plan: _PostgresPlan
        if let incremental, shapes.isEmpty {
            plan = try make(incremental, parsed, roles: roles, columns: columns, version: versionText)
        } else {
            plan = try refetched(sql, parsed, roles: roles, columns: columns, identity: identityText, section: sectionText,
                                 reason: .request(shapes))
        }
        try await readRelations(&plan)
        return plan
    }

    /// Aggregates and window functions outside subqueries, volatile functions, the current time.
    private func functionShapes(_ parsed: _PgParsedSelect) async throws(PostgresLiveQueryError) -> [RefetchReason.Shape] {
        var shapes: [RefetchReason.Shape] = []
        let names = Array(Set(parsed.functions.map(\.name))).sorted()
        var volatile: [String] = []
        var timely = parsed.readsCurrentTime
        if !names.isEmpty {
            var binds = PostgresBindings()
            binds.append(names)
            let rows = try await session.rows("""
                SELECT proname::text, bool_or(prokind IN ('a', 'w')), bool_or(provolatile = 'v')
                FROM pg_proc WHERE proname = ANY($1::text[]) GROUP BY proname ORDER BY proname
                """, binds)
            for row in rows {
                let (name, aggregate, isVolatile) = try _PostgresPlan.decode(row, as: (String, Bool, Bool).self)
                if aggregate, parsed.functions.contains(where: { $0.name == name && !$0.inSubquery }) { shapes.append(.aggregate(name)) }
                if Self.timeFunctions.contains(name) {
                    timely = true
                } else if isVolatile {
                    volatile.append(name)
                }
            }
        }
        if !volatile.isEmpty { shapes.append(.nondeterministicFunctions(volatile)) }
        if timely { shapes.append(.currentTime) }
        return shapes
    }

    private static var timeFunctions: Set<String> { ["now", "statement_timestamp", "transaction_timestamp", "clock_timestamp", "timeofday"] }

    // MARK: - Row by row

    struct Incremental {
        var identity: Column
        var terms: [Term]
        var links: [Int: (parent: Int, column: Column)]
    }

    /// The identity, the joins' links and the sort terms, when the SELECT can be followed row by
    /// row; the shapes that keep it from it otherwise.
    private func incremental(_ parsed: _PgParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)], identity: String?,
                             section: String?, shapes: inout [RefetchReason.Shape]) async throws(PostgresLiveQueryError) -> Incremental? {
        guard let key = roles[0].table.key else { return nil }
        // The identity: the base table's key, however it is named.
        if let identity {
            let resolved = reference(identity).flatMap { resolve($0, parsed, roles, columns) }
            guard let resolved, resolved.role == 0, resolved.column.name == key.name else {
                throw .identityNotPrimaryKey(table: roles[0].table.qualifiedName, identity: identity)
            }
        }
        // Each joined table meets at most one row: an equality between its key and an earlier table's column.
        var links: [Int: (parent: Int, column: Column)] = [:]
        for (offset, join) in parsed.joins.enumerated() {
            let role = offset + 1
            guard let joinedKey = roles[role].table.key else {
                shapes.append(.noSingleColumnKey(roles[role].table.qualifiedName))
                continue
            }
            let visible = Array(roles[...role])
            for case let .equality(left, right) in join.conjuncts {
                guard let a = resolve(left, nil, visible, []), let b = resolve(right, nil, visible, []) else { continue }
                for (mine, other) in [(a, b), (b, a)]
                where mine.role == role && mine.column.name == joinedKey.name && other.role < role && other.column.typeOID == joinedKey.typeOID {
                    links[role] = (other.role, other.column)
                }
                if links[role] != nil { break }
            }
            if links[role] == nil { shapes.append(.joinMeetsSeveralRows(roles[role].table.qualifiedName)) }
        }
        // The sort terms: columns of the FROM tables, compared here exactly as PostgreSQL does.
        var terms: [Term] = []
        for term in parsed.orderBy {
            guard let reference = term.column else {
                shapes.append(.orderByExpression(term.text))
                continue
            }
            guard let resolved = resolve(reference, parsed, roles, columns) else {
                shapes.append(.orderByNotColumn(term.text))
                continue
            }
            guard let type = _PgType(oid: resolved.column.typeOID) else {
                shapes.append(.orderByType(column: term.text, type: resolved.column.typeName))
                continue
            }
            if type.isCollatable {
                var column = resolved.column
                if let collation = term.collation {
                    (column.collation, column.provider) = try await _PgCatalog.collation(named: collation, session)
                    column.collationName = collation
                }
                if !Self.comparesByBytes(column) {
                    shapes.append(.customCollation((column.collationName ?? "") + " (" + (column.collation ?? "") + ")"))
                    continue
                }
            }
            let descending = term.descending
            let rule = _PostgresOrdering.Rule(comparison: type.comparison, descending: descending, nullsFirst: term.nulls.map { $0 == .first } ?? descending)
            let sql = Self.quoted(roles[resolved.role].qualifier) + "." + Self.quoted(resolved.column.name)
            terms.append(Term(role: resolved.role, column: resolved.column, rule: rule, sql: sql, collation: term.collation, parsed: term))
        }
        if let section {
            let first = parsed.orderBy.first
            let written = first.map { Self.same(section, $0.text) } ?? false
            let resolvedSame = terms.first.map { term in
                term.parsed == first && reference(section).flatMap { resolve($0, parsed, roles, columns) }
                    .map { $0.role == term.role && $0.column.name == term.column.name } == true
            } ?? false
            guard written || resolvedSame else { throw .sectionNotFirstSortTerm(section) }
        }
        return Incremental(identity: key, terms: terms, links: links)
    }

    /// Text compared by bytes: the C and POSIX collations (libc or the database's) and ucs_basic.
    static func comparesByBytes(_ column: Column) -> Bool {
        if column.collationName == "C" || column.collationName == "POSIX" || column.collationName == "ucs_basic" { return true }
        guard column.provider != "i" else { return false }
        return column.collation == "C" || column.collation == "POSIX"
    }

    static func same(_ a: String, _ b: String) -> Bool {
        a.trimmingCharacters(in: .whitespacesAndNewlines) == b.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `name`, `alias.name`, `"Quoted"` as a column reference.
    private func reference(_ text: String) -> _PgParsedSelect.ColumnReference? {
        guard let tokens = try? _PgSQLTokenizer.tokens(text) else { return nil }
        var names: [String] = []
        for (offset, token) in tokens.enumerated() {
            if offset % 2 == 1 {
                guard token.isPunctuation == "." else { return nil }
                continue
            }
            guard case let .identifier(name, _) = token.kind else { return nil }
            names.append(name)
        }
        guard tokens.count % 2 == 1, (1...3).contains(names.count) else { return nil }
        return _PgParsedSelect.ColumnReference(qualifier: names.count > 1 ? names[names.count - 2] : nil, name: names[names.count - 1])
    }

    /// The table and column a reference names. A bare name that is an output column's name (as
    /// ORDER BY reads it first) resolves through that output column, and not at all when the
    /// output column is not one of a table's columns.
    private func resolve(_ reference: _PgParsedSelect.ColumnReference, _ parsed: _PgParsedSelect?, _ roles: [Role],
                         _ columns: [(name: String, type: UInt32)]) -> (role: Int, column: Column)? {
        if reference.qualifier == nil, let parsed, columns.contains(where: { $0.name == reference.name }) {
            // An output column of that name: an aliased item, a column item, or a table's column through `*`.
            if let item = parsed.items.first(where: { $0.alias == reference.name }) {
                guard let column = item.column, column != reference else { return nil }
                return resolve(column, nil, roles, [])
            }
            let explained = parsed.items.contains { item in
                item.alias == nil && (item.column?.name == reference.name || item.text == "*" || item.text.hasSuffix(".*"))
            }
            guard explained else { return nil }
        }
        if let qualifier = reference.qualifier {
            guard let role = roles.firstIndex(where: { $0.qualifier == qualifier }), let column = roles[role].table.columns[reference.name] else {
                return nil
            }
            return (role, column)
        }
        let holders = roles.indices.filter { roles[$0].table.columns[reference.name] != nil }
        guard holders.count == 1, let column = roles[holders[0]].table.columns[reference.name] else { return nil }
        return (holders[0], column)
    }
}
