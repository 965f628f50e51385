import LiveQueryCore
import PostgresNIO

/// Makes a request's plan (``PostgresPlan``): reads the SELECT, has the server check it and name
/// its columns, resolves its tables, joins and sort terms against the catalog, and decides whether
/// it is followed row by row or refetched — every shape it cannot follow row by row adds a reason.
struct PostgresPlanner<ID: LiveIdentity> {
    typealias Column = PostgresTable.Column
    typealias Role = PostgresPlan.Role

    let request: PostgresLiveQueryRequest<ID>
    let session: PostgresSession
    /// Whether the publication sends a partitioned table's changes under its own name.
    let publishesViaRoot: Bool

    /// A resolved ORDER BY term.
    struct Term {
        var role: Int
        var column: Column
        var rule: PostgresOrdering.Rule
        /// As the statements write it.
        var sql: String
        var collation: String?
        var parsed: PostgresParsedSelect.OrderTerm
    }

    static func quoted(_ identifier: String) -> String { PostgresPlan.quoted(identifier) }

    static func make(_ request: PostgresLiveQueryRequest<ID>, publishesViaRoot: Bool, _ session: PostgresSession)
        async throws(PostgresLiveQueryError) -> PostgresPlan {
        try await PostgresPlanner(request: request, session: session, publishesViaRoot: publishesViaRoot).plan()
    }

    // MARK: - The SELECT

    /// The request as SQL, with its identity, section and version as the SELECT names them.
    private func lowered() async throws(PostgresLiveQueryError) -> (sql: String, identity: String?, section: String?, version: String?) {
        if let sql = request.sql { return (Self.withoutTrailingSemicolons(sql), request.identity, request.section, request.version) }
        guard let table = try await PostgresCatalog.table(named: request.table, session), table.kind == "r" || table.kind == "p" else {
            throw .unknownTable(request.table)
        }
        func column(_ name: String) throws(PostgresLiveQueryError) -> String {
            guard table.columns[name] != nil else { throw .unknownColumn(table: request.table, column: name) }
            return Self.quoted(name)
        }
        // The identity: the primary key by default, or any column that identifies the rows.
        guard let identity = request.identity ?? table.key?.name else {
            throw .identityNotUnique(table: request.table, identity: nil, fix: "add one, or name with identity a NOT NULL column "
                                     + "with a unique index on it alone")
        }
        guard let identityColumn = table.columns[identity] else { throw .unknownColumn(table: request.table, column: identity) }
        guard table.identifies(identityColumn) else {
            throw .identityNotUnique(table: request.table, identity: identity, fix: table.uniquenessFix(for: identityColumn)
                                     + (table.key.map { ", or name its primary key \($0.name)" } ?? ""))
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
        return (sql, Self.quoted(identity), request.section.map(Self.quoted), version)
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
        guard var tokens = try? PostgresSQLTokenizer.tokens(sql), tokens.last?.isPunctuation == ";" else { return sql }
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

    private func plan() async throws(PostgresLiveQueryError) -> PostgresPlan {
        let (sql, identityText, sectionText, versionText) = try await lowered()
        let parsed = PostgresSelectParser.parse(sql)
        if parsed.shapes.contains(.unreadableSQL) || parsed.shapes.contains(.emptySQL) {
            // The server's own words for what it cannot read either.
            _ = try await describe(sql)
        }
        let columns = try await describe(sql)
        var shapes = parsed.shapes
        var roles: [Role] = []
        if let base = parsed.base {
            for reference in [base] + parsed.joins.map(\.table) {
                guard let table = try await PostgresCatalog.table(named: reference.text, session) else { throw .unknownTable(reference.text) }
                if table.kind == "p", !publishesViaRoot { throw .partitionsNotPublishedViaRoot(table: table.qualifiedName) }
                if !(table.kind == "r" || table.kind == "p") { shapes.append(.viewOrVirtualTable(table.qualifiedName)) }
                roles.append(Role(table: table, qualifier: reference.qualifier))
            }
        }
        shapes += try await functionShapes(parsed)
        // GROUP BY and aggregates alone: followed group by group when the groups are the base
        // table's rows (`incremental` says whether they are).
        let groupShapes = shapes.filter(Self.isGrouping)
        let grouped = !groupShapes.isEmpty && groupShapes.count == shapes.count && parsed.groupBy != nil && parsed.havingText == nil
        if grouped { shapes = [] }

        var incremental: Incremental?
        if shapes.isEmpty, let base = roles.first {
            if base.table.key == nil {
                shapes.append(.noSingleColumnKey(base.table.qualifiedName))
            } else {
                incremental = try await self.incremental(parsed, roles: roles, columns: columns, identity: identityText, section: sectionText,
                                                         grouped: grouped, shapes: &shapes)
            }
        }
        var plan: PostgresPlan
        if let incremental, shapes.isEmpty {
            plan = try make(incremental, parsed, roles: roles, columns: columns, version: versionText)
            plan.layout.resultSource = await statedSource(incremental, parsed, roles: roles, columns: columns)
        } else {
            plan = try await refetched(sql, parsed, roles: roles, columns: columns, identity: identityText, section: sectionText,
                                 reason: .request(grouped ? groupShapes + shapes : shapes))
        }
        try await readRelations(&plan)
        return plan
    }

    /// Aggregates and window functions outside subqueries, volatile functions, the current time.
    private func functionShapes(_ parsed: PostgresParsedSelect) async throws(PostgresLiveQueryError) -> [RefetchReason.Shape] {
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
                let (name, aggregate, isVolatile) = try PostgresPlan.decode(row, as: (String, Bool, Bool).self)
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

    static func isGrouping(_ shape: RefetchReason.Shape) -> Bool {
        switch shape {
        case .groupBy, .aggregate: true
        default: false
        }
    }

    private static var timeFunctions: Set<String> { ["now", "statement_timestamp", "transaction_timestamp", "clock_timestamp", "timeofday"] }

    // MARK: - Row by row

    struct Incremental {
        /// The column that identifies the result's rows: the base table's key, or a NOT NULL
        /// column with a unique index on it alone.
        var identity: Column
        /// The base table's single-column primary key: what its changes name rows by.
        var key: Column
        var terms: [Term]
        var links: [Int: (parent: Int, column: Column)]
        /// Grouped by the base table's key: the joined tables whose rows the groups aggregate
        /// (by role), each with its column that names the group (equal to the base table's key).
        var children: [Int: Column] = [:]
        var grouped = false
    }

    /// The identity, the joins' links and the sort terms, when the SELECT can be followed row by
    /// row; the shapes that keep it from it otherwise.
    private func incremental(_ parsed: PostgresParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)], identity: String?,
                             section: String?, grouped: Bool, shapes: inout [RefetchReason.Shape]) async throws(PostgresLiveQueryError) -> Incremental? {
        guard let key = roles[0].table.key,
              let identityColumn = try identityColumn(identity, key: key, parsed, roles: roles, columns: columns, grouped: grouped) else { return nil }
        let (links, children) = joinLinks(parsed, roles: roles, key: key, grouped: grouped, shapes: &shapes)
        if grouped {
            guard groupsByKey(parsed, key: key, roles: roles, children: children) else { return nil }
            for (role, _) in children.sorted(by: { $0.key < $1.key }) where parsed.whereReferences.contains(where: { reference in
                reference.qualifier.map { $0 == roles[role].qualifier } ?? (roles[role].table.columns[reference.name] != nil)
            }) {
                shapes.append(.filterReadsAggregatedTable(roles[role].table.qualifiedName))
            }
        }
        let terms = try await sortTerms(parsed, roles: roles, columns: columns, children: children, grouped: grouped, shapes: &shapes)
        guard shapes.isEmpty else { return nil }
        if let section { try checkSection(section, terms: terms, parsed, roles: roles, columns: columns) }
        return Incremental(identity: identityColumn, key: key, terms: terms, links: links, children: children, grouped: grouped)
    }

    /// The column that identifies the rows: the base table's key, or another column of it that
    /// identifies its rows (its changes still name rows by the key), however it is named; `nil`
    /// when a grouped query's rows are identified otherwise (refetched, read from the result).
    private func identityColumn(_ identity: String?, key: Column, _ parsed: PostgresParsedSelect, roles: [Role],
                                columns: [(name: String, type: UInt32)], grouped: Bool) throws(PostgresLiveQueryError) -> Column? {
        guard let identity else { return key }
        let resolved = reference(identity).flatMap { resolve($0, parsed, roles, columns) }
        guard let resolved, resolved.role == 0, roles[0].table.identifies(resolved.column) else {
            // Groups that are not the base table's rows: refetched, their identity read from the result.
            if grouped { return nil }
            throw .identityNotUnique(table: roles[0].table.qualifiedName, identity: identity,
                                     fix: identityFix(identity, resolved: resolved, roles: roles))
        }
        // Groups are read by the key they group by: another identity is read from the result.
        if grouped, resolved.column.name != key.name { return nil }
        return resolved.column
    }

    /// How each joined table meets at most one row — an equality between its key and an earlier
    /// table's column (`links`) — or, grouped, the tables whose rows the groups aggregate
    /// (`children`); a join that meets several rows is a shape that keeps the query from
    /// being followed row by row.
    private func joinLinks(_ parsed: PostgresParsedSelect, roles: [Role], key: Column, grouped: Bool, shapes: inout [RefetchReason.Shape])
        -> (links: [Int: (parent: Int, column: Column)], children: [Int: Column])
    {
        var links: [Int: (parent: Int, column: Column)] = [:]
        var children: [Int: Column] = [:]
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
                where mine.role == role && mine.column.name == joinedKey.name && other.role < role && children[other.role] == nil
                    && other.column.typeOID == joinedKey.typeOID {
                    links[role] = (other.role, other.column)
                }
                if links[role] != nil { break }
            }
            if links[role] == nil, grouped, let link = childLink(join, role: role, key: key, roles: visible) {
                children[role] = link
                continue
            }
            if links[role] == nil { shapes.append(.joinMeetsSeveralRows(roles[role].table.qualifiedName)) }
        }
        return (links, children)
    }

    /// What to name, or to change, for `identity` to identify the base table's rows.
    private func identityFix(_ identity: String, resolved: (role: Int, column: Column)?, roles: [Role]) -> String {
        let base = roles[0].table
        let key = base.key.map { Self.quoted(roles[0].qualifier) + "." + Self.quoted($0.name) }
        let keyAdvice = key.map { "name \($0), its primary key" }
        guard let resolved else {
            return "name a column of \(base.qualifiedName) as alias.column (an expression or an output name cannot identify rows)"
                + (key.map { ", such as \($0), its primary key" } ?? "")
        }
        guard resolved.role == 0 else {
            return "it is a column of the joined table \(roles[resolved.role].table.qualifiedName), which several result rows can meet: "
                + (keyAdvice ?? "name a column of \(base.qualifiedName)")
        }
        return base.uniquenessFix(for: resolved.column) + (keyAdvice.map { ", or " + $0 } ?? "")
    }

    /// The column of a joined table whose rows the groups aggregate: an ON equality between it and
    /// the base table's key (of the same type). The table must be another than the base table.
    private func childLink(_ join: PostgresParsedSelect.Join, role: Int, key: Column, roles: [Role]) -> Column? {
        guard roles[role].table.oid != roles[0].table.oid, roles[role].table.key != nil else { return nil }
        for case let .equality(left, right) in join.conjuncts {
            guard let a = resolve(left, nil, roles, []), let b = resolve(right, nil, roles, []) else { continue }
            for (mine, other) in [(a, b), (b, a)]
            where mine.role == role && other.role == 0 && other.column.name == key.name && mine.column.typeOID == key.typeOID {
                return mine.column
            }
        }
        return nil
    }

    /// Whether GROUP BY names the base table's key, and otherwise only columns of the base table and
    /// of the tables it meets one row of (read as PostgreSQL reads GROUP BY: input columns first):
    /// then each group is one base row.
    private func groupsByKey(_ parsed: PostgresParsedSelect, key: Column, roles: [Role], children: [Int: Column]) -> Bool {
        guard let terms = parsed.groupBy, !terms.isEmpty else { return false }
        var namesKey = false
        for term in terms {
            guard let reference = term.column, let resolved = resolve(reference, nil, roles, []), children[resolved.role] == nil else { return false }
            if resolved.role == 0, resolved.column.name == key.name { namesKey = true }
        }
        return namesKey
    }

    /// ORDER BY expressions (an aggregate, `lower(title)`) as hidden sort columns: their types
    /// and collations from the server, which evaluates them with the row (no row is read here).
    /// An expression whose type or collation cannot be compared here adds its shape.
    func expressionTerms(_ expressions: [(text: String, term: PostgresParsedSelect.OrderTerm)], _ parsed: PostgresParsedSelect, grouped: Bool,
                                 shapes: inout [RefetchReason.Shape]) async throws(PostgresLiveQueryError) -> [Term] {
        let texts = expressions.map(\.text)
        let named = texts.enumerated().map { "(" + $0.element + ") AS livelist_e\($0.offset)" }
        // The select list too, so that every argument the SELECT binds is used here as well.
        let inner = "SELECT " + (named + [parsed.selectList]).joined(separator: ", ") + " FROM " + parsed.fromText
            + (parsed.whereText.map { " WHERE " + $0 } ?? "") + (grouped ? parsed.groupByText.map { " GROUP BY " + $0 } ?? "" : "")
        let described: [(name: String, type: UInt32)]
        do throws(PostgresLiveQueryError) {
            described = try await describe(inner)
        } catch {
            if error.isLostConnection { throw error }
            shapes += texts.map { .orderByExpression($0) }
            return []
        }
        let collatable = texts.indices.filter { PostgresType(oid: described[$0].type)?.isCollatable == true }
        var collations: [Int: String] = [:]
        if !collatable.isEmpty {
            let select = "SELECT " + collatable.map { "pg_collation_for(livelist_e.livelist_e\($0))::text" }.joined(separator: ", ")
                + " FROM (" + inner + "\n) AS livelist_e RIGHT JOIN (SELECT) AS livelist_one ON false"
            if let row = try await session.rows(select, request.arguments).first {
                for (offset, cell) in row.enumerated() { collations[collatable[offset]] = cell.bytes.map { String(buffer: $0) } }
            }
        }
        var terms: [Term] = []
        for (index, text) in texts.enumerated() {
            let oid = described[index].type
            guard let type = PostgresType(oid: oid) else {
                shapes.append(.orderByType(column: text, type: "oid \(oid)"))
                continue
            }
            let parsedTerm = expressions[index].term
            var column = Column(name: text, attnum: 0, typeOID: oid, typeName: "", collation: nil, collationName: nil, provider: nil)
            if type.isCollatable {
                // The term's own COLLATE, else the one PostgreSQL derives for the expression.
                guard let name = parsedTerm.collation ?? collations[index].map(Self.lastName) else {
                    shapes.append(.customCollation("none (\(text))"))
                    continue
                }
                column.collationName = name
                (column.collation, column.provider) = name == "default"
                    ? try await PostgresCatalog.databaseCollation(session) : try await PostgresCatalog.collation(named: name, session)
                if !Self.comparesByBytes(column) {
                    shapes.append(.customCollation(name + " (" + (column.collation ?? "") + ")"))
                    continue
                }
            }
            let descending = parsedTerm.descending
            let rule = PostgresOrdering.Rule(comparison: type.comparison, descending: descending, nullsFirst: parsedTerm.nulls.map { $0 == .first } ?? descending)
            terms.append(Term(role: 0, column: column, rule: rule, sql: "(" + text + ")", collation: parsedTerm.collation, parsed: parsedTerm))
        }
        return terms
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
    func reference(_ text: String) -> PostgresParsedSelect.ColumnReference? {
        guard let tokens = try? PostgresSQLTokenizer.tokens(text) else { return nil }
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
        return PostgresParsedSelect.ColumnReference(qualifier: names.count > 1 ? names[names.count - 2] : nil, name: names[names.count - 1])
    }

    /// The table and column a reference names. A bare name that is an output column's name (as
    /// ORDER BY reads it first) resolves through that output column, and not at all when the
    /// output column is not one of a table's columns.
    func resolve(_ reference: PostgresParsedSelect.ColumnReference, _ parsed: PostgresParsedSelect?, _ roles: [Role],
                         _ columns: [(name: String, type: UInt32)]) -> (role: Int, column: Column)? {
        if reference.qualifier == nil, let parsed, columns.contains(where: { $0.name == reference.name }) {
            // An output column of that name: an aliased item, a column item, or a table's column through `*`.
            if let item = parsed.items.first(where: { $0.alias == reference.name }) {
                guard let column = item.column, column != reference else { return nil }
                return resolve(column, nil, roles, [])
            }
            // A column item of that name (`c.id`): its column, when only one item makes that name.
            let named = parsed.items.filter { $0.alias == nil && $0.column?.name == reference.name }
            if named.count == 1, let column = named[0].column, column != reference, !parsed.items.contains(where: { $0.alias == reference.name }) {
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
