import Foundation
import GRDB
import GRDBSQLite
import LiveQueryCore

/// Decides whether a compiled SELECT can be maintained incrementally and, if so, writes the
/// statements that fetch it, re-read changed rows and load records, and the lookups that map a
/// joined row's change to result rows. Every shape it cannot maintain adds a reason.
struct SelectPlanner<ID: LiveIdentity> {
    /// A column of a FROM table: which table (by position), which column (as declared).
    struct Resolved: Equatable {
        var table: Int
        var column: String
        var isRowid: Bool
    }

    /// What the incremental path needs (see ``QueryPlan``).
    struct Incremental {
        var base: TableSchema
        /// Its name in the statements (its alias, when it has one).
        var baseName: String
        var layout: ResultLayout
        var fetchSQL: String
        var scanningFetchSQL: String
        var countSQL: String
        var tableCountSQL: String
        var rereadPrefixSQL: String
        var columns: QueryPlan.Columns
        var otherTables: Set<String>
        var conflictColumns: [String: Set<String>]
        var joinedTables: Set<String>
        var joins: [JoinLookup]
        var region: DatabaseRegion
        var silentTables: [String]
        var notes: [String]
        var records: QueryPlan.RecordQuery
    }

    let compiled: CompiledSelect
    let request: LiveQueryRequest<ID>
    let identityHoldsIntegers: Bool
    let db: Database
    private(set) var reasons: [RefetchReason.Shape] = []
    private(set) var incremental: Incremental?
    private(set) var schemas: [TableSchema] = []
    /// ``plainResultColumns()``, once the schemas are read.
    private(set) var plainColumns: [Resolved?]?

    init(compiled: CompiledSelect, request: LiveQueryRequest<ID>, identityHoldsIntegers: Bool, db: Database) {
        self.compiled = compiled
        self.request = request
        self.identityHoldsIntegers = identityHoldsIntegers
        self.db = db
        reasons = compiled.parsed.refetchReasons
    }

    var parsed: ParsedSelect { compiled.parsed }

    private func fail(_ error: any Error, _ sql: String) -> LiveQueryError {
        LiveQueryError.from(error, sql: sql, arguments: compiled.arguments)
    }

    /// A joined table's link to the tables before it: the equality of its ON clause that makes it
    /// meet at most one of its rows.
    typealias Link = (parent: Int, key: Resolved, foreign: Resolved, conjunct: String, collation: String)
    /// An ORDER BY term: its SQL as the plan writes it, its column, and how the index compares it.
    typealias Term = (sql: String, resolved: Resolved, rule: SortKeyComparator.Rule)

    /// The identity as the statements read it.
    struct Identity {
        var sql: String
        var isRowid: Bool
        /// The column, when the identity is one (`nil` for an expression).
        var column: Resolved?
    }

    /// The statements of an incremental plan, and what the fetch reads.
    struct Statements {
        var fetch: String
        var scanningFetch: String
        var reread: String
        var records: String
        var payload: String
        var count: String
        var region: DatabaseRegion
    }

    /// Plans the SELECT in named steps; a step that meets a shape it cannot maintain adds a
    /// reason and planning stops (the query is then refetched).
    mutating func plan() throws(LiveQueryError) {
        guard reasons.isEmpty, try readSchemas(), let baseRowidName = baseRowidName() else { return }
        plainColumns = plainResultColumns()
        let baseRowid = parsed.tables[0].visibleName.quotedIdentifier + "." + baseRowidName
        guard let links = try joinLinks(), var terms = orderTerms() else { return }
        try checkSection(terms)
        let identity = try identity(baseRowid: baseRowid)
        dropIdentityTieBreak(&terms, identity)
        let (selected, columns) = columnsRead(baseRowid: baseRowid, terms: terms, identity: identity)
        if let reason = try selfReadingReason(selected: selected) {
            reasons.append(reason)
            return
        }
        let functionSQL = compiled.sql + " " + (request.identity ?? "") + " " + (request.version ?? "")
        reasons += try QueryPlan.functionShapes(sql: functionSQL, arguments: compiled.arguments, functions: compiled.functions, db)
        guard reasons.isEmpty else { return }
        let statements = try statements(baseRowid: baseRowid, terms: terms, identity: identity, selected: selected)
        guard let (joins, notes) = try joinLookups(links, baseRowid: baseRowid, region: statements.region) else { return }
        try finish(statements: statements, columns: columns, layout: layout(terms: terms, identity: identity), joins: joins, notes: notes)
    }

    /// Reads the schema of every FROM table; `false` (with a reason) when one is a view or a
    /// virtual table.
    private mutating func readSchemas() throws(LiveQueryError) -> Bool {
        do {
            for table in parsed.tables {
                guard let schema = try TableSchema.read(table.name, db) else {
                    reasons.append(.viewOrVirtualTable(table.name))
                    return false
                }
                schemas.append(schema)
            }
        } catch {
            throw fail(error, compiled.sql)
        }
        return true
    }

    /// The base table's rowid, by the name its columns leave free (`nil`, with a reason, for a
    /// WITHOUT ROWID table or one whose columns hide it).
    private mutating func baseRowidName() -> String? {
        let base = schemas[0]
        guard !base.isWithoutRowid, let name = base.rowidName else {
            reasons.append(base.isWithoutRowid ? .withoutRowid(base.name) : .hiddenRowid(base.name))
            return nil
        }
        return name
    }

    /// Each joined table's link: it must meet at most one row per row of the tables before it.
    private mutating func joinLinks() throws(LiveQueryError) -> [Link]? {
        var links: [Link] = []
        for index in parsed.tables.indices.dropFirst() {
            guard let link = manyToOneLink(index) else {
                if identifiesBaseRows() {
                    // Rows of the base table repeat once per row they meet: its key cannot be the identity.
                    throw LiveQueryError.invalidRequest(.oneToManyJoin(joined: parsed.tables[index].visibleName, base: schemas[0].name, identity: request.identity))
                }
                reasons.append(.joinMeetsSeveralRows(parsed.tables[index].visibleName))
                return nil
            }
            links.append(link)
        }
        return links
    }

    /// The ORDER BY terms: columns, compared as SQLite does (`nil`, with a reason, otherwise).
    private mutating func orderTerms() -> [Term]? {
        var terms: [Term] = []
        for term in parsed.order {
            guard let resolved = resolve(term.column, aliases: true) else {
                reasons.append(.orderByNotColumn((term.column.qualifier.map { $0 + "." } ?? "") + term.column.column))
                return nil
            }
            let collation: SortTerm.Collation
            if let name = term.collation {
                switch name.uppercased() {
                case "BINARY": collation = .binary
                case "NOCASE": collation = .nocase
                case "RTRIM": collation = .rtrim
                default: collation = .custom(name)
                }
            } else if resolved.isRowid {
                collation = .binary
            } else {
                collation = TableSchema.declaredCollation(db, table: schemas[resolved.table].name, column: resolved.column)
            }
            if case let .custom(name) = collation {
                reasons.append(.customCollation(name))
                return nil
            }
            let rule = SortKeyComparator.Rule(descending: term.descending, nullsFirst: term.nulls.map { $0 == .first } ?? !term.descending,
                                              collation: collation)
            var sql = qualified(resolved) + " COLLATE " + collation.sqlName + (term.descending ? " DESC" : " ASC")
            if let nulls = term.nulls { sql += nulls == .first ? " NULLS FIRST" : " NULLS LAST" }
            terms.append((sql, resolved, rule))
        }
        return terms
    }

    /// Sections are the first sort term.
    private func checkSection(_ terms: [Term]) throws(LiveQueryError) {
        guard let section = request.section else { return }
        let reference = ParsedSelect.columnReference(section)
        if let reference, resolve(reference, aliases: true) == nil {
            throw LiveQueryError.invalidRequest(.noSuchColumn(role: .section, name: section, available: columnNames()))
        }
        guard let first = terms.first, let reference, resolve(reference, aliases: true) == first.resolved else {
            let firstTerm = parsed.order.first.map { ($0.column.qualifier.map { $0 + "." } ?? "") + $0.column.column }
            throw LiveQueryError.invalidRequest(.sectionNotFirstSortTerm(section: section, firstTerm: firstTerm))
        }
    }

    /// The identity: the base table's key by default; a column must be unique in the result.
    private func identity(baseRowid: String) throws(LiveQueryError) -> Identity {
        let base = schemas[0]
        var identity: Identity
        if let given = request.identity {
            if let reference = ParsedSelect.columnReference(given) {
                guard let resolved = resolve(reference, aliases: true) else {
                    throw LiveQueryError.invalidRequest(.noSuchColumn(role: .identity, name: given, available: columnNames()))
                }
                let schema = schemas[resolved.table]
                guard resolved.table == 0 else {
                    throw LiveQueryError.invalidRequest(.identityInJoinedTable(identity: given, table: parsed.tables[resolved.table].visibleName, base: base.name))
                }
                guard resolved.isRowid || schema.isUnique(resolved.column) else {
                    throw LiveQueryError.invalidRequest(.identityNotUnique(identity: given, table: schema.name))
                }
                let isRowid = resolved.isRowid || resolved.column == schema.rowidAlias
                identity = Identity(sql: isRowid ? baseRowid : qualified(resolved), isRowid: isRowid, column: resolved)
            } else {
                identity = Identity(sql: "(" + given + ")", isRowid: false, column: nil)   // an expression: its uniqueness is checked row by row
            }
        } else if base.rowidAlias != nil || base.primaryKey.count != 1 {
            identity = Identity(sql: baseRowid, isRowid: true, column: nil)
        } else {
            identity = Identity(sql: parsed.tables[0].visibleName.quotedIdentifier + "." + base.primaryKey[0].quotedIdentifier, isRowid: false, column: nil)
        }
        if identity.isRowid, !identityHoldsIntegers {
            throw LiveQueryError.invalidRequest(.integerIdentity(named: request.identity, table: base.name, declared: "\(ID.self)"))
        }
        return identity
    }

    /// A last ORDER BY term that is the identity, ascending and compared as stored, is the
    /// tie-break the index adds anyway (a lowered table request ends with it): one sort value
    /// less per row.
    private func dropIdentityTieBreak(_ terms: inout [Term], _ identity: Identity) {
        guard let last = terms.last, terms.count > (request.section == nil ? 0 : 1), last.resolved.table == 0,
              last.resolved.isRowid ? identity.isRowid : last.resolved == identity.column,
              !last.rule.descending, last.rule.nullsFirst, last.rule.collation == .binary else { return }
        terms.removeLast()
    }

    /// Where the query's own columns are in the payload read: the digested columns, or the ones
    /// after the version.
    private static func valueColumns(of columns: QueryPlan.Columns, count: Int32) -> Range<Int32> {
        switch columns.content {
        case let .digest(range): range
        case let .version(column): column + 1..<column + 1 + count
        }
    }

    /// The columns the statements read — base rowid, sort values, identity, then the version or
    /// the user's columns — and where each part is.
    private func columnsRead(baseRowid: String, terms: [Term], identity: Identity) -> (selected: [String], columns: QueryPlan.Columns) {
        var selected = [baseRowid] + terms.map { qualified($0.resolved) }
        if !identity.isRowid { selected.append(identity.sql) }
        let keyEnd = Int32(selected.count)
        let userColumns = Int32(compiled.columnNames.count)
        let content: QueryPlan.Columns.Content
        if let version = request.version.map({ versionExpression($0) }) {
            selected.append(version)
            content = .version(keyEnd)
            if parsed.resultColumnsHaveParameters { selected.append(parsed.resultColumns) }   // their arguments come first
        } else {
            selected.append(parsed.resultColumns)
            content = .digest(keyEnd..<keyEnd + userColumns)
        }
        return (selected, QueryPlan.Columns(rowid: 0, key: Array(1..<keyEnd), content: content))
    }

    /// The fetch, its table-scanning twin, the re-read of touched rows and the record load,
    /// compiled once to check them and to learn what they read.
    private func statements(baseRowid: String, terms: [Term], identity: Identity, selected: [String]) throws(LiveQueryError) -> Statements {
        let from = parsed.from
        let baseTable = parsed.tables[0]
        var unindexedFrom = from
        if !baseTable.hasIndexHint {
            let bytes = Array(compiled.sql.utf8)
            unindexedFrom = String(decoding: bytes[parsed.fromRange.lowerBound..<baseTable.endOffset], as: UTF8.self) + " NOT INDEXED"
                + String(decoding: bytes[baseTable.endOffset..<parsed.fromRange.upperBound], as: UTF8.self)
        }
        let whereClause = parsed.whereClause.map { " WHERE (\($0))" } ?? ""
        let whereAnd = parsed.whereClause.map { "(\($0)) AND " } ?? ""
        let order = " ORDER BY " + (terms.map(\.sql) + [identity.isRowid ? baseRowid : identity.sql + " COLLATE BINARY"]).joined(separator: ", ")
        let list = selected.joined(separator: ", ")
        let fetchSQL = "SELECT \(list) FROM \(from)\(whereClause)" + order
        let region: DatabaseRegion
        do {
            let statement = try db.makeStatement(sql: fetchSQL)
            try statement.validateArguments(compiled.arguments)
            region = statement.databaseRegion
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidRequest(.invalidExpression(message: error.message ?? "\(error)", sql: fetchSQL))
        } catch {
            throw fail(error, fetchSQL)
        }
        return Statements(
            fetch: fetchSQL, scanningFetch: "SELECT \(list) FROM \(unindexedFrom)\(whereClause)" + order,
            reread: "SELECT \(list) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN (",
            records: "SELECT \(parsed.resultColumns), \(baseRowid) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN (",
            // The re-read has the query's columns unless a version stands for them.
            payload: request.version != nil && !parsed.resultColumnsHaveParameters
                ? "SELECT \(list), \(parsed.resultColumns) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN ("
                : "SELECT \(list) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN (",
            count: parsed.resultColumnsHaveParameters ? "" : "SELECT count(*) FROM \(from)\(whereClause)", region: region)
    }

    /// How the index orders and sections rows: the sort terms, then the identity unless it is
    /// the rowid.
    private func layout(terms: [Term], identity: Identity) -> ResultLayout {
        var comparator = SortKeyComparator(terms: [], collations: [])
        comparator.rules = terms.map(\.rule)
        let sectionRule = request.section != nil ? comparator.rules.first : nil
        if !identity.isRowid { comparator.rules.append(SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary)) }
        var layout = ResultLayout(ordering: comparator, identityIsRowid: identity.isRowid, sections: sectionRule, sectionsArePositional: false)
        layout.resultOrder = resultOrder(terms)
        layout.resultSource = statedSource(identity: identity)
        return layout
    }

    /// For each joined table, the lookup from its changed rows to the base rows that meet them,
    /// and a note when that lookup scans for want of an index (`nil`, with a reason, when a
    /// lookup cannot be written).
    private mutating func joinLookups(_ links: [Link], baseRowid: String, region: DatabaseRegion) throws(LiveQueryError) -> ([JoinLookup], [String])? {
        let names = parsed.tables.map { $0.visibleName.quotedIdentifier }
        var joins: [JoinLookup] = []
        var notes: [String] = []
        func path(to end: Int) -> String {
            var chain = [end]
            while let last = chain.last, last != 0 { chain.append(links[last - 1].parent) }
            var path = "main.\(schemas[0].name.quotedIdentifier) AS \(names[0])"
            for table in chain.reversed().dropFirst() {
                path += " JOIN main.\(schemas[table].name.quotedIdentifier) AS \(names[table]) ON \(links[table - 1].conjunct)"
            }
            return path
        }
        for (offset, link) in links.enumerated() {
            let index = offset + 1
            // Another connection's change arrives as the joined row's key values (the change log):
            // the base rows whose foreign column equals one, compared as the ON clause compares.
            let keyLookup = "SELECT \(baseRowid) FROM \(path(to: link.parent)) WHERE \(qualified(link.foreign)) COLLATE \(link.collation) IN ("
            let lookup = JoinLookup(schema: schemas[index], alias: parsed.tables[index].visibleName, from: path(to: index), baseRowid: baseRowid,
                                     updateColumns: updateColumns(of: index, region: region),
                                     keyColumn: link.key.isRowid ? nil : link.key.column, keyLookupPrefix: keyLookup)
            do {
                _ = try db.makeStatement(sql: lookup.lookup(touch: "count", where: lookup.rowCondition("NEW").replacingOccurrences(of: "NEW.", with: "\(names[index]).")))
            } catch {
                reasons.append(.joinLookupUnavailable(table: parsed.tables[index].visibleName, message: "\(error)"))
                return nil
            }
            joins.append(lookup)
            let foreign = link.foreign
            if !foreign.isRowid, !(try hasIndex(on: foreign.column, of: schemas[foreign.table])) {
                notes.append("no index on \(schemas[foreign.table].name)(\(foreign.column)): a change to a row of \(schemas[index].name) scans \(schemas[foreign.table].name) to find the rows that meet it")
            }
        }
        return (joins, notes)
    }

    /// The incremental plan, with what it must know of the other tables the query reads.
    private mutating func finish(statements: Statements, columns: QueryPlan.Columns, layout: ResultLayout, joins: [JoinLookup],
                                 notes: [String]) throws(LiveQueryError) {
        let base = schemas[0]
        var fromTables = Set(schemas.map { $0.name.lowercased() })
        let otherTables: Set<String>
        let silentTables: [String]
        let conflictColumns: [String: Set<String>]
        do {
            otherTables = try QueryPlan.tables(readBy: statements.region, db).subtracting(fromTables)
            (silentTables, conflictColumns) = try QueryPlan.facts(ofOtherTables: otherTables, db)
        } catch {
            throw fail(error, statements.fetch)
        }
        fromTables.remove(base.name.lowercased())
        incremental = Incremental(
            base: base, baseName: parsed.tables[0].visibleName, layout: layout, fetchSQL: statements.fetch,
            scanningFetchSQL: statements.scanningFetch, countSQL: statements.count,
            tableCountSQL: "SELECT count(*) FROM main.\(base.name.quotedIdentifier)", rereadPrefixSQL: statements.reread,
            columns: columns, otherTables: otherTables, conflictColumns: conflictColumns, joinedTables: fromTables, joins: joins,
            region: statements.region, silentTables: silentTables, notes: notes,
            records: QueryPlan.RecordQuery(prefix: statements.records, arguments: compiled.arguments, keyIsRowid: true, adapter: compiled.adapter,
                                           payloadPrefix: statements.payload, payloadColumns: columns,
                                           valueColumns: Self.valueColumns(of: columns, count: Int32(compiled.columnNames.count)),
                                           columnNames: compiled.columnNames))
    }

    /// The order stated on the result's columns: each term the result column that reads the
    /// term's table column as stored (``plainResultColumns()``), the identity last; `nil` when a
    /// term is not among them.
    private func resultOrder(_ terms: [Term]) -> ResultOrder? {
        guard let plain = plainColumns else { return nil }
        var stated: [ResultOrder.Term] = []
        for term in terms {
            guard let index = plain.firstIndex(where: { $0 == term.resolved }) else { return nil }
            stated.append(ResultOrder.Term(column: index, descending: term.rule.descending, nullsFirst: term.rule.nullsFirst, collation: term.rule.collation))
        }
        // The tie-break: the identity as stored, ascending (NULLs first, as SQLite puts them).
        stated.append(ResultOrder.Term(column: nil, descending: false, nullsFirst: true))
        return ResultOrder(terms: stated)
    }

    /// Whether the identity is the base table's key (the default) or one of its columns.
    /// The columns of the query's tables, qualified by the names the query gives them.
    private func columnNames() -> [String] {
        zip(parsed.tables, schemas).flatMap { table, schema in schema.columns.map { table.visibleName + "." + $0.name } }
    }

    private func identifiesBaseRows() -> Bool {
        guard let given = request.identity else { return true }
        guard let reference = ParsedSelect.columnReference(given), let resolved = resolve(reference, aliases: true) else { return false }
        return resolved.table == 0
    }

    // MARK: - Columns

    private func qualified(_ resolved: Resolved) -> String {
        let name = parsed.tables[resolved.table].visibleName.quotedIdentifier
        return name + "." + (resolved.isRowid ? resolved.column : resolved.column.quotedIdentifier)
    }

    /// The column `reference` names in the FROM tables; with `aliases`, a bare name that is a
    /// result column's alias (`SELECT name AS title … ORDER BY title`) resolves to that column,
    /// as SQLite resolves ORDER BY terms.
    private func resolve(_ reference: ParsedSelect.ColumnReference, aliases: Bool) -> Resolved? {
        if let qualifier = reference.qualifier {
            guard let table = parsed.tables.firstIndex(where: { $0.visibleName.caseInsensitiveCompare(qualifier) == .orderedSame }) else { return nil }
            return column(reference.column, in: table)
        }
        if aliases {
            switch resolveAlias(reference.column) {
            case let .column(resolved): return resolved
            case .expression: return nil
            case .none: break
            }
        }
        let matches = schemas.indices.compactMap { column(reference.column, in: $0) }
        return matches.count == 1 ? matches[0] : nil
    }

    /// What a result column's name stands for in ORDER BY.
    private enum Alias {
        /// A table column under another name.
        case column(Resolved)
        /// An expression (a subquery too): the term is that expression, not a table's column.
        case expression
        /// No alias: the name is a table column's.
        case none
    }

    private func resolveAlias(_ name: String) -> Alias {
        for (index, columnName) in compiled.columnNames.enumerated() where columnName.caseInsensitiveCompare(name) == .orderedSame {
            guard let resolved = plainColumns?[index] else { return .expression }
            guard resolved.column.caseInsensitiveCompare(name) != .orderedSame else { continue }   // not an alias
            return .column(resolved)
        }
        return .none
    }

    /// Each result column's table column when the column reads it as stored — a bare column
    /// reference of the select list (its alias aside) or a column of `*` / `table.*` — else `nil`
    /// (an expression); `nil` altogether when the select list cannot be matched with the columns.
    /// SQLite's column origins alone do not tell: a scalar subquery reports its inner column's.
    private func plainResultColumns() -> [Resolved?]? {
        let items = parsed.resultItems
        let stars = items.filter { if case .star = $0 { true } else { false } }.count
        let count = compiled.columnNames.count
        guard stars <= 1, items.count - stars <= count, stars == 1 || items.count == count else { return nil }
        var result: [Resolved?] = []
        for item in items {
            switch item {
            case let .column(reference): result.append(resolve(reference, aliases: false))
            case .expression: result.append(nil)
            case .star:
                // The columns `*` expands to: SQLite names each one's origin, a table's column as stored.
                for index in result.count..<result.count + count - (items.count - 1) {
                    guard let origin = compiled.origins[index] else {
                        result.append(nil)
                        continue
                    }
                    let tables = schemas.indices.filter { schemas[$0].name.caseInsensitiveCompare(origin.table) == .orderedSame }
                    result.append(tables.count == 1 ? column(origin.column, in: tables[0]) : nil)
                }
            }
        }
        return result.count == count ? result : nil
    }

    private func column(_ name: String, in table: Int) -> Resolved? {
        let schema = schemas[table]
        if let match = schema.columns.first(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) {
            return Resolved(table: table, column: match.name, isRowid: match.name == schema.rowidAlias)
        }
        if let rowid = schema.rowidName, ["rowid", "_rowid_", "oid"].contains(name.lowercased()) {
            return Resolved(table: table, column: rowid, isRowid: true)
        }
        return nil
    }

    private func versionExpression(_ given: String) -> String {
        if let reference = ParsedSelect.columnReference(given), let resolved = resolve(reference, aliases: true) { return qualified(resolved) }
        return "(" + given + ")"
    }

    /// The collation a unique index on `column` compares with (`nil`: no such index).
    private func uniqueCollation(_ column: String, in schema: TableSchema) -> String? {
        if schema.primaryKey == [column] && schema.rowidAlias == column { return "BINARY" }
        for index in schema.uniqueIndexes where index.predicate == nil && index.terms.count == 1 {
            if case let .column(name, collation) = index.terms[0], name == column { return collation.uppercased() }
        }
        return nil
    }

    /// The equality of table `index`'s ON clause that makes it meet at most one of its rows per
    /// row of the tables before it: a unique column of it (compared under its index's collation,
    /// or BINARY) against a column of an earlier table with the same type affinity.
    private func manyToOneLink(_ index: Int) -> (parent: Int, key: Resolved, foreign: Resolved, conjunct: String, collation: String)? {
        let table = parsed.tables[index]
        for equality in table.equalities {
            guard let lhs = resolve(equality.lhs, aliases: false), let rhs = resolve(equality.rhs, aliases: false) else { continue }
            for (key, foreign) in [(lhs, rhs), (rhs, lhs)] where key.table == index && foreign.table < index {
                let schema = schemas[index]
                if key.isRowid { return (foreign.table, key, foreign, table.conditions[equality.conjunct], "BINARY") }
                guard let indexCollation = uniqueCollation(key.column, in: schema) else { continue }
                // `a = b` compares under a's declared collation (the left operand's).
                let left = lhs
                let comparison = left.isRowid ? "BINARY" : TableSchema.declaredCollation(db, table: schemas[left.table].name, column: left.column).sqlName
                guard comparison == "BINARY" || comparison == indexCollation else { continue }
                guard affinity(of: key) == affinity(of: foreign) else { continue }
                return (foreign.table, key, foreign, table.conditions[equality.conjunct], comparison)
            }
        }
        return nil
    }

    /// The type affinity of a column (determined by its declared type; docs/SQLITE-FACTS.md, ordering §7).
    private func affinity(of resolved: Resolved) -> String {
        if resolved.isRowid { return "INTEGER" }
        var declared: UnsafePointer<CChar>?
        let status = sqlite3_table_column_metadata(db.sqliteConnection, "main", schemas[resolved.table].name, resolved.column, &declared, nil, nil, nil, nil)
        let type = status == SQLITE_OK ? declared.map { String(cString: $0).uppercased() } ?? "" : ""
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// The columns of joined table `index` whose UPDATE can change the result or delete a row by
    /// REPLACE; `nil` when that is every column.
    private func updateColumns(of index: Int, region: DatabaseRegion) -> [String]? {
        let schema = schemas[index]
        var columns = Set<String>()
        for column in schema.columns where region.isModified(byEventsOfKind: .update(tableName: schema.name, columnNames: [column.name])) {
            columns.insert(column.name)
        }
        for unique in schema.uniqueIndexes {
            for term in unique.terms {
                guard case let .column(name, _) = term, unique.predicate == nil else { return nil }
                columns.insert(name)
            }
        }
        if let alias = schema.rowidAlias { columns.insert(alias) }
        guard columns.count < schema.columns.count else { return nil }
        return schema.columns.map(\.name).filter { columns.contains($0) }
    }

    private func hasIndex(on column: String, of schema: TableSchema) throws(LiveQueryError) -> Bool {
        if schema.primaryKey.first == column { return true }
        do {
            return try Bool.fetchOne(db, sql: """
                SELECT count(*) > 0 FROM pragma_index_list(?) AS list
                WHERE (SELECT name FROM pragma_index_info(list.name) WHERE seqno = 0) = ? COLLATE NOCASE
                """, arguments: [schema.name, column]) ?? false
        } catch {
            throw fail(error, "pragma_index_list")
        }
    }

    /// Compiles the query's expressions over stand-ins for its tables that read nothing: if the
    /// statement still reads one of them, a subquery does, and rows the query did not join can
    /// change its result.
    private func selfReadingReason(selected: [String]) throws(LiveQueryError) -> RefetchReason.Shape? {
        var standIns: [String] = []
        for (table, schema) in zip(parsed.tables, schemas) {
            var names = schema.columns.map(\.name)
            let lowered = Set(names.map { $0.lowercased() })
            if !schema.isWithoutRowid { names += ["rowid", "_rowid_", "oid"].filter { !lowered.contains($0) } }
            standIns.append("(SELECT " + names.map { "NULL AS \($0.quotedIdentifier)" }.joined(separator: ", ") + ") AS " + table.visibleName.quotedIdentifier)
        }
        let conditions = parsed.tables.flatMap(\.conditions) + (parsed.whereClause.map { [$0] } ?? [])
        let probe = "SELECT " + selected.joined(separator: ", ") + " FROM " + standIns.joined(separator: ", ")
            + (conditions.isEmpty ? "" : " WHERE " + conditions.map { "(\($0))" }.joined(separator: " AND "))
        let region: DatabaseRegion
        do {
            region = try db.makeStatement(sql: probe).databaseRegion
        } catch {
            return .unknownReads(message: "\(error)")
        }
        for schema in schemas where region.isModified(byEventsOfKind: .insert(tableName: schema.name)) {
            return .readsOwnTable(schema.name)
        }
        return nil
    }
}
