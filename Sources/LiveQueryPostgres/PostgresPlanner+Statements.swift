import LiveQueryCore
import PostgresNIO

extension PostgresPlanner {
    /// The statements and layout of a SELECT followed row by row.
    func make(_ incremental: Incremental, _ parsed: PostgresParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)],
              version: String?) throws(PostgresLiveQueryError) -> PostgresPlan {
        let identity = incremental.identity, key = incremental.key
        // Another column than the key identifies the rows: the statements read both.
        let separateKey = identity.name != key.name
        let (identityType, keyType) = try identityTypes(identity, key: key, base: roles[0].table.qualifiedName)
        let identityIsRowKey = identityType == .integer && !separateKey
        let rules = incremental.terms.map(\.rule)
        let identityRule = PostgresOrdering.Rule(comparison: identityType.comparison, descending: false, nullsFirst: false)
        var layout = ResultLayout(ordering: PostgresOrdering(rules: identityIsRowKey ? rules : rules + [identityRule]),
                                   identityIsRowid: identityIsRowKey, sections: request.section != nil ? rules.first : nil,
                                   sectionsArePositional: false)
        layout.resultOrder = resultOrder(incremental.terms, parsed, roles: roles, columns: columns)

        let id = Self.quoted(roles[0].qualifier) + "." + Self.quoted(identity.name)
        let keyColumn = Self.quoted(roles[0].qualifier) + "." + Self.quoted(key.name)
        // What every read row begins with: the key and the identity, or the one column that is both.
        let leading = separateKey ? [keyColumn, id] : [id]
        let sorts = incremental.terms.map(\.sql)
        // Ties are broken by the identity, compared here by bytes: so must the server compare it.
        let tiebreak = id + (identityType == .text ? " COLLATE \"C\"" : "") + " ASC"
        let order = incremental.terms.map { term in
            term.sql + (term.collation.map { " COLLATE " + Self.quoted($0) } ?? "") + (term.rule.descending ? " DESC" : " ASC")
                + (term.parsed.nulls.map { $0 == .first ? " NULLS FIRST" : " NULLS LAST" } ?? "")
        } + [tiebreak]
        let content = version ?? parsed.selectList
        let head = "SELECT " + (leading + sorts + [content]).joined(separator: ", ") + " FROM " + parsed.fromText
        let filter = parsed.whereText.map { "(" + $0 + ")" }
        // Contents are asked for by identity (a list's rows); re-reads by key (a change's rows).
        let identities = "\(id) = ANY(CAST($\(request.arguments.count + 1) AS text[])::\(identity.typeName)[])"
        let keys = "\(keyColumn) = ANY(CAST($\(request.arguments.count + 1) AS text[])::\(key.typeName)[])"
        // Grouped by the base table's key: a group is read whole by its key, as a row is.
        let groupBy = incremental.grouped ? parsed.groupByText.map { " GROUP BY " + $0 } ?? "" : ""

        // Contents: the columns the index reads (for the content token), then the SELECT's.
        let contentCount = version == nil ? columns.count : 1
        let offset = leading.count + sorts.count + contentCount
        // Through the filter too, so that every argument the SELECT binds is used as it is there (a
        // row that no longer matches has changed, and is left out like one whose token differs).
        let inner = "SELECT " + (leading + sorts + [content] + (version == nil ? [] : [parsed.selectList])).joined(separator: ", ")
            + " FROM " + parsed.fromText + " WHERE " + (filter.map { $0 + " AND " } ?? "") + identities + groupBy
        let selectStart = version == nil ? leading.count + sorts.count : offset
        let payload = Self.payloadSQL(inner, raw: offset, columns: columns, firstSelected: selectStart)

        // A lookup names the base rows it reaches by their key, as a change would.
        let joins = incremental.links.keys.sorted().map { role in
            joinLookup(role, links: incremental.links, roles: roles, identity: keyColumn)
        }
        let children = childLookups(incremental, roles: roles)
        let notes = indexNotes(incremental, roles: roles)
        let rereadSQL = head + " WHERE " + (filter.map { $0 + " AND " } ?? "") + keys + groupBy
        return PostgresPlan(
            roles: roles, identity: identity, key: key, identityIsRowKey: identityIsRowKey, integerKeys: keyType == .integer,
            sortColumns: incremental.terms.map(\.column), layout: layout, sectionRule: request.section != nil ? rules.first : nil,
            refetchReason: nil, shape: .positional(sorts: sorts.count, separateKey: separateKey),
            fetchSQL: head + (filter.map { " WHERE " + $0 } ?? "") + groupBy + " ORDER BY " + order.joined(separator: ", "),
            rereadSQL: rereadSQL, rereadBatchSQL: RereadBatch.template(rereadSQL, arguments: request.arguments.count),
            payloadSQL: payload, payloadOffset: offset,
            valuesInReads: version == nil && columns.allSatisfy({ PostgresType.carriedAsIs($0.type) }) ? leading.count + sorts.count : nil,
            columnNames: columns.map(\.name), arguments: request.arguments, joins: joins,
            children: children, otherRelations: [], notes: notes)
    }

    /// The types of the identity and of the key, each one rows can be identified by (integers,
    /// text or uuid), the identity's one `ID` decodes.
    private func identityTypes(_ identity: Column, key: Column, base: String) throws(PostgresLiveQueryError) -> (PostgresType, PostgresType) {
        let keyTypes: [PostgresType] = [.integer, .text, .uuid]
        guard let identityType = PostgresType(oid: identity.typeOID), keyTypes.contains(identityType) else {
            throw .identityNotUnique(table: base, identity: identity.name, fix: "it is of type \(identity.typeName), and rows are "
                                     + "identified by integers, text or uuid: name a column of one of those types")
        }
        guard let keyType = PostgresType(oid: key.typeOID), keyTypes.contains(keyType) else {
            throw .identityNotUnique(table: base, identity: identity.name, fix: "the primary key \(key.name), which its changes name "
                                     + "rows by, is of type \(key.typeName): a key of integers, text or uuid is needed")
        }
        if identityType == .integer ? !ID.decodes(.integer) : !ID.decodes(.text) {
            throw .identityTypeMismatch(column: identity.name, declared: "\(ID.self)")
        }
        return (identityType, keyType)
    }

    /// Grouped: for each joined table whose rows the groups aggregate, how to find the groups a
    /// change of its rows touches, and a group's rows.
    private func childLookups(_ incremental: Incremental, roles: [Role]) -> [PostgresPlan.ChildLookup] {
        incremental.children.keys.sorted().compactMap { role -> PostgresPlan.ChildLookup? in
            guard let link = incremental.children[role], let key = roles[role].table.key else { return nil }
            let table = roles[role].table.qualifiedName + " AS livelist_c"
            let columns = "livelist_c." + Self.quoted(key.name) + "::text, livelist_c." + Self.quoted(link.name) + "::text"
            return PostgresPlan.ChildLookup(
                role: role, key: key,
                changedSQL: "SELECT " + columns + " FROM " + table + " WHERE livelist_c." + Self.quoted(key.name)
                    + " = ANY(CAST($1 AS text[])::" + key.typeName + "[])",
                groupsSQL: "SELECT " + columns + " FROM " + table + " WHERE livelist_c." + Self.quoted(link.name)
                    + " = ANY(CAST($1 AS text[])::" + incremental.identity.typeName + "[])")
        }
    }

    /// What `explain` tells: a grouped query's cost, and the joins and groups whose lookups scan
    /// a table for want of an index (with the index to make).
    private func indexNotes(_ incremental: Incremental, roles: [Role]) -> [String] {
        var notes: [String] = []
        if incremental.grouped {
            notes.append("grouped by \(roles[0].table.qualifiedName)'s key: a commit re-reads the groups whose rows it changed")
        }
        for role in incremental.children.keys.sorted() {
            guard let link = incremental.children[role], !roles[role].table.indexedColumns.contains(link.attnum) else { continue }
            let table = roles[role].table.qualifiedName
            notes.append("\(table).\(Self.quoted(link.name)) has no index: each group that enters the result scans \(table) for its rows "
                + "(CREATE INDEX ON \(table) (\(Self.quoted(link.name))))")
        }
        for role in incremental.links.keys.sorted() {
            guard let (parent, column) = incremental.links[role], !roles[parent].table.indexedColumns.contains(column.attnum) else { continue }
            let table = roles[parent].table.qualifiedName
            notes.append("\(table).\(Self.quoted(column.name)) has no index: each change to \(roles[role].table.qualifiedName) scans \(table) "
                + "for the rows that meet it (CREATE INDEX ON \(table) (\(Self.quoted(column.name)))")
        }
        return notes
    }

    /// The order stated on the SELECT's columns: each term the select-list item that is the term's
    /// column, of a type whose wire values compare as PostgreSQL compares it (integers, booleans,
    /// text compared by bytes, bytea), the identity last; `nil` otherwise, or when the select list
    /// expands `*` (its items are then not its columns).
    func resultOrder(_ terms: [Term], _ parsed: PostgresParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)]) -> ResultOrder? {
        guard parsed.items.count == columns.count, !parsed.items.contains(where: { $0.text == "*" || $0.text.hasSuffix(".*") }) else { return nil }
        var stated: [ResultOrder.Term] = []
        for term in terms {
            guard let type = PostgresType(oid: term.column.typeOID), [.integer, .boolean, .text, .bytea].contains(type),
                  let index = parsed.items.firstIndex(where: { item in
                      guard let reference = item.column, let resolved = resolve(reference, nil, roles, []) else { return false }
                      return resolved.role == term.role && resolved.column.name == term.column.name
                  }) else { return nil }
            stated.append(ResultOrder.Term(column: index, descending: term.rule.descending, nullsFirst: term.rule.nullsFirst))
        }
        stated.append(ResultOrder.Term(column: nil, descending: false, nullsFirst: false))
        return ResultOrder(terms: stated)
    }

    /// The base rows that meet the changed rows of `role`'s table: along the joins' links from the
    /// base table to the role's parent, by the parent's link column.
    private func joinLookup(_ role: Int, links: [Int: (parent: Int, column: Column)], roles: [Role], identity: String) -> PostgresPlan.JoinLookup {
        guard let (parent, column) = links[role], let key = roles[role].table.key else {
            preconditionFailure("a join lookup is made for linked roles only")
        }
        var path: [Int] = []
        var step = parent
        while step != 0, let link = links[step] {
            path.insert(step, at: 0)
            step = link.parent
        }
        func name(_ role: Int) -> String { roles[role].table.qualifiedName + " AS " + Self.quoted(roles[role].qualifier) }
        var from = name(0)
        for hop in path {
            guard let link = links[hop], let hopKey = roles[hop].table.key else { continue }
            from += " JOIN " + name(hop) + " ON " + Self.quoted(roles[hop].qualifier) + "." + Self.quoted(hopKey.name) + " = "
                + Self.quoted(roles[link.parent].qualifier) + "." + Self.quoted(link.column.name)
        }
        let link = Self.quoted(roles[parent].qualifier) + "." + Self.quoted(column.name)
        // The link's text names the changed row that met the base row: which commit's change reached it.
        let sql = "SELECT " + identity + ", " + link + "::text FROM " + from + " WHERE " + link + " = ANY(CAST($1 AS text[])::" + key.typeName + "[])"
        return PostgresPlan.JoinLookup(role: role, key: key, sql: sql)
    }

    /// The statements and layout of a SELECT refetched on every commit to its tables, in the
    /// server's order: the SELECT as written, its identity and section read from its columns.
    func refetched(_ sql: String, _ parsed: PostgresParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)], identity: String?,
                   section: String?, reason: RefetchReason) async throws(PostgresLiveQueryError) -> PostgresPlan {
        func column(named name: String) -> Int? {
            let matching = columns.indices.filter { columns[$0].name == name }
            return matching.count == 1 ? matching[0] : nil
        }
        let identityName = identity.map(Self.lastName) ?? roles.first?.table.key?.name ?? "id"
        func notInResult(type: String? = nil) -> PostgresLiveQueryError {
            .identityNotInResult(identity: identityName, columns: columns.map(\.name), type: type, why: reason.description)
        }
        guard let identityColumn = column(named: identityName) else { throw notInResult() }
        guard let identityType = PostgresType(oid: columns[identityColumn].type) else {
            var binds = PostgresBindings()
            binds.append(Int64(columns[identityColumn].type))
            let name = try await session.rows("SELECT format_type($1::int8::oid, NULL)", binds).first
                .flatMap { try? PostgresPlan.decode($0, as: String.self) }
            throw notInResult(type: name ?? "oid \(columns[identityColumn].type)")
        }
        if identityType == .integer ? !ID.decodes(.integer) : !ID.decodes(.text) {
            throw .identityTypeMismatch(column: identityName, declared: "\(ID.self)")
        }
        var sectionColumn: Int?
        var sectionRule: PostgresOrdering.Rule?
        if let section {
            let name = Self.lastName(section)
            guard let index = column(named: name), let first = parsed.orderBy.first,
                  Self.same(first.text, section) || first.column?.name == name else { throw .sectionNotFirstSortTerm(section) }
            sectionColumn = index
            sectionRule = PostgresOrdering.Rule(comparison: PostgresType(oid: columns[index].type)?.comparison ?? .bytes, descending: first.descending,
                                                 nullsFirst: first.nulls.map { $0 == .first } ?? first.descending)
        }
        let layout = ResultLayout(ordering: FetchOrder(), identityIsRowid: false, sections: sectionRule, sectionsArePositional: true)
        let identityColumnName = Self.quoted(identityName)
        let inner = "SELECT * FROM (" + sql + "\n) AS livelist_s WHERE livelist_s." + identityColumnName + "::text = ANY($\(request.arguments.count + 1)::text[])"
        let payload = Self.payloadSQL(inner, raw: columns.count, columns: columns, firstSelected: 0)
        let identity = PostgresTable.Column(name: identityName, attnum: 0, typeOID: columns[identityColumn].type, typeName: "", collation: nil,
                                       collationName: nil, provider: nil)
        var plan = PostgresPlan(
            roles: roles, identity: identity, key: identity, identityIsRowKey: false, integerKeys: false, sortColumns: [], layout: layout,
            sectionRule: sectionRule, refetchReason: reason,
            shape: .named(identity: identityColumn, section: sectionColumn), fetchSQL: sql, rereadSQL: sql, payloadSQL: payload,
            payloadOffset: columns.count, valuesInReads: columns.allSatisfy({ PostgresType.carriedAsIs($0.type) }) ? 0 : nil,
            columnNames: columns.map(\.name), arguments: request.arguments, joins: [], otherRelations: [], notes: [])
        plan.isTotallyOrdered = Self.endsWithIdentity(parsed, identityColumn: identityColumn, identityName: identityName, columns: columns.count)
        return plan
    }

    /// Whether the ORDER BY's last term is the identity column: its output name, its position, or
    /// the expression of the select item that makes it.
    static func endsWithIdentity(_ parsed: PostgresParsedSelect, identityColumn: Int, identityName: String, columns: Int) -> Bool {
        guard let last = parsed.orderBy.last else { return false }
        let term = last.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if term == String(identityColumn + 1) || (last.column?.qualifier == nil && last.column?.name == identityName) { return true }
        guard parsed.items.count == columns, !parsed.items.contains(where: { $0.text.hasSuffix("*") }) else { return false }
        return same(parsed.items[identityColumn].text, term)
    }

    /// `alias.name` → `name`, unquoted as PostgreSQL reads it.
    static func lastName(_ text: String) -> String {
        guard let tokens = try? PostgresSQLTokenizer.tokens(text), let last = tokens.last, case let .identifier(name, _) = last.kind else { return text }
        return name
    }

    /// `inner`'s columns as they are (`raw` of them), then the SELECT's columns (from
    /// `firstSelected`) as the wire carries them: numbers, text, bytes and booleans as PostgreSQL
    /// sends them, every other type in PostgreSQL's text form (dates and times in UTC, ISO).
    static func payloadSQL(_ inner: String, raw: Int, columns: [(name: String, type: UInt32)], firstSelected: Int) -> String {
        let total = max(raw, firstSelected + columns.count)
        let names = (0..<total).map { "c\($0)" }
        let converted = columns.indices.map { index in
            let name = "livelist_q.c\(firstSelected + index)"
            return PostgresType.carriedAsIs(columns[index].type) ? name : name + "::text"
        }
        return "SELECT " + (names[..<raw].map { "livelist_q." + $0 } + converted).joined(separator: ", ")
            + " FROM (" + inner + ") AS livelist_q(" + names.joined(separator: ", ") + ")"
    }

    /// The tables the fetch reads, from the server's own plan: other tables (in subqueries) refetch
    /// on change; a FROM table read more often than the FROM clause names it (a subquery over it)
    /// makes the query refetch on every commit to it.
    func readRelations(_ plan: inout PostgresPlan) async throws(PostgresLiveQueryError) {
        let rows = try await session.rows("EXPLAIN (FORMAT JSON, COSTS OFF, VERBOSE) " + plan.fetchSQL, plan.arguments)
        guard let json = rows.first?.first(where: { _ in true })?.bytes.map({ String(buffer: $0) }) else { return }
        var names: [String] = []
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
            names.append(Self.quoted(schema) + "." + Self.quoted(relation))
            rest = tail[end...]
        }
        guard !names.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(names)
        // Each scanned relation, as the table it belongs to (a partition: its root).
        var scans: [UInt32: Int] = [:]
        for row in try await session.rows("""
            SELECT coalesce(pg_partition_root(to_regclass(name)), to_regclass(name))::oid::int8 FROM unnest($1::text[]) AS name
            """, binds) {
            if let oid = try PostgresPlan.decode(row, as: Int64?.self) { scans[UInt32(truncatingIfNeeded: oid), default: 0] += 1 }
        }
        let roleCounts = Dictionary(plan.roles.map { ($0.table.oid, 1) }, uniquingKeysWith: +)
        plan.otherRelations = Set(scans.keys).subtracting(roleCounts.keys)
        guard plan.refetchReason == nil else { return }
        // (A partitioned table is scanned once per partition: its scans say nothing of subqueries.)
        for role in plan.roles where role.table.kind != "p" && (scans[role.table.oid] ?? 0) > (roleCounts[role.table.oid] ?? 0) {
            plan.refetchReason = .request([.readsOwnTable(role.table.qualifiedName)])
            plan.layout = ResultLayout(ordering: FetchOrder(), identityIsRowid: false, sections: plan.sectionRule, sectionsArePositional: true)
            plan.shape = .positional(sorts: plan.sortColumns.count, separateKey: plan.identity.name != plan.key.name)
            plan.identityIsRowKey = false
            plan.integerKeys = false
            return
        }
    }
}
