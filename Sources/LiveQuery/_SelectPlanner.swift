import Foundation
import GRDB
import GRDBSQLite

/// Decides whether a compiled SELECT can be maintained incrementally and, if so, writes the
/// statements that fetch it, re-read changed rows and load records, and the lookups that map a
/// joined row's change to result rows. Every shape it cannot maintain adds a reason.
struct _SelectPlanner<ID: LiveIdentity> {
    /// A column of a FROM table: which table (by position), which column (as declared).
    struct Resolved: Equatable {
        var table: Int
        var column: String
        var isRowid: Bool
    }

    /// What the incremental path needs (see ``QueryPlan``).
    struct Incremental {
        var base: _TableSchema
        /// Its name in the statements (its alias, when it has one).
        var baseName: String
        var layout: _ResultLayout
        var fetchSQL: String
        var scanningFetchSQL: String
        var countSQL: String
        var tableCountSQL: String
        var rereadPrefixSQL: String
        var columns: QueryPlan.Columns
        var otherTables: Set<String>
        var conflictColumns: [String: Set<String>]
        var joinedTables: Set<String>
        var joins: [_JoinLookup]
        var region: DatabaseRegion
        var silentTables: [String]
        var notes: [String]
        var records: QueryPlan.RecordQuery
    }

    let compiled: _CompiledSelect
    let request: LiveQueryRequest<ID>
    let identityHoldsIntegers: Bool
    let db: Database
    private(set) var reasons: [RefetchReason.Shape] = []
    private(set) var incremental: Incremental?
    private var schemas: [_TableSchema] = []

    init(compiled: _CompiledSelect, request: LiveQueryRequest<ID>, identityHoldsIntegers: Bool, db: Database) {
        self.compiled = compiled
        self.request = request
        self.identityHoldsIntegers = identityHoldsIntegers
        self.db = db
        reasons = compiled.parsed.refetchReasons
    }

    private var parsed: _ParsedSelect { compiled.parsed }

    private func fail(_ error: any Error, _ sql: String) -> LiveQueryError {
        LiveQueryError.from(error, sql: sql, arguments: compiled.arguments)
    }

    mutating func plan() throws(LiveQueryError) {
        guard reasons.isEmpty else { return }
        do {
            for table in parsed.tables {
                guard let schema = try _TableSchema.read(table.name, db) else {
                    reasons.append(.viewOrVirtualTable(table.name))
                    return
                }
                schemas.append(schema)
            }
        } catch {
            throw fail(error, compiled.sql)
        }
        let base = schemas[0]
        guard !base.isWithoutRowid, let baseRowidName = base.rowidName else {
            reasons.append(base.isWithoutRowid ? .withoutRowid(base.name) : .hiddenRowid(base.name))
            return
        }
        let names = parsed.tables.map { $0.visibleName.quotedIdentifier }
        let baseRowid = names[0] + "." + baseRowidName

        // Each joined table must meet at most one row per row of the tables before it.
        var parents: [(parent: Int, key: Resolved, foreign: Resolved, conjunct: String, collation: String)] = []
        for index in parsed.tables.indices.dropFirst() {
            guard let link = manyToOneLink(index) else {
                if identifiesBaseRows() {
                    // Rows of the base table repeat once per row they meet: its key cannot be the identity.
                    throw LiveQueryError.invalidRequest(.oneToManyJoin(joined: parsed.tables[index].visibleName, base: base.name, identity: request.identity))
                }
                reasons.append(.joinMeetsSeveralRows(parsed.tables[index].visibleName))
                return
            }
            parents.append(link)
        }

        // The ORDER BY terms: columns, compared as SQLite does.
        var terms: [(sql: String, resolved: Resolved, rule: SortKeyComparator.Rule)] = []
        for term in parsed.order {
            guard let resolved = resolve(term.column, aliases: true) else {
                reasons.append(.orderByNotColumn((term.column.qualifier.map { $0 + "." } ?? "") + term.column.column))
                return
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
                collation = _TableSchema.declaredCollation(db, table: schemas[resolved.table].name, column: resolved.column)
            }
            if case let .custom(name) = collation {
                reasons.append(.customCollation(name))
                return
            }
            let rule = SortKeyComparator.Rule(descending: term.descending, nullsFirst: term.nulls.map { $0 == .first } ?? !term.descending,
                                              collation: collation)
            var sql = qualified(resolved) + " COLLATE " + collation.sqlName + (term.descending ? " DESC" : " ASC")
            if let nulls = term.nulls { sql += nulls == .first ? " NULLS FIRST" : " NULLS LAST" }
            terms.append((sql, resolved, rule))
        }

        // Sections: the first sort term.
        if let section = request.section {
            let reference = _ParsedSelect.columnReference(section)
            if let reference, resolve(reference, aliases: true) == nil {
                throw LiveQueryError.invalidRequest(.noSuchColumn(role: .section, name: section, available: columnNames()))
            }
            guard let first = terms.first, let reference, resolve(reference, aliases: true) == first.resolved else {
                let firstTerm = parsed.order.first.map { ($0.column.qualifier.map { $0 + "." } ?? "") + $0.column.column }
                throw LiveQueryError.invalidRequest(.sectionNotFirstSortTerm(section: section, firstTerm: firstTerm))
            }
        }

        // The identity: the base table's key by default; a column must be unique in the result.
        let identity: String
        var identityIsRowid = false
        if let given = request.identity {
            if let reference = _ParsedSelect.columnReference(given) {
                guard let resolved = resolve(reference, aliases: true) else {
                    throw LiveQueryError.invalidRequest(.noSuchColumn(role: .identity, name: given, available: columnNames()))
                }
                let schema = schemas[resolved.table]
                guard resolved.table == 0 else {
                    throw LiveQueryError.invalidRequest(.identityInJoinedTable(identity: given, table: parsed.tables[resolved.table].visibleName, base: base.name))
                }
                guard resolved.isRowid || isUnique(resolved.column, in: schema) else {
                    throw LiveQueryError.invalidRequest(.identityNotUnique(identity: given, table: schema.name))
                }
                identityIsRowid = resolved.isRowid || resolved.column == schema.rowidAlias
                identity = identityIsRowid ? baseRowid : qualified(resolved)
            } else {
                identity = "(" + given + ")"   // an expression: its uniqueness is checked row by row
            }
        } else if base.rowidAlias != nil || base.primaryKey.count != 1 {
            identity = baseRowid
            identityIsRowid = true
        } else {
            identity = names[0] + "." + base.primaryKey[0].quotedIdentifier
        }
        if identityIsRowid, !identityHoldsIntegers {
            throw LiveQueryError.invalidRequest(.integerIdentity(named: request.identity, table: base.name, declared: "\(ID.self)"))
        }
        let version = request.version.map { versionExpression($0) }

        // The columns: base rowid, sort values, identity, version or the user's columns.
        let readsIdentity = !identityIsRowid
        var selected = [baseRowid] + terms.map { qualified($0.resolved) }
        if readsIdentity { selected.append(identity) }
        let keyEnd = Int32(selected.count)
        let userColumns = Int32(compiled.columnNames.count)
        let content: QueryPlan.Columns.Content
        if let version {
            selected.append(version)
            content = .version(keyEnd)
            if parsed.resultColumnsHaveParameters { selected.append(parsed.resultColumns) }   // their arguments come first
        } else {
            selected.append(parsed.resultColumns)
            content = .digest(keyEnd..<keyEnd + userColumns)
        }
        let columns = QueryPlan.Columns(rowid: 0, key: Array(1..<keyEnd), content: content)

        // Does the query read its own tables beyond the rows it joins, or depend on more than them?
        if let reason = try selfReadingReason(selected: selected) {
            reasons.append(reason)
            return
        }
        let functionSQL = compiled.sql + " " + (request.identity ?? "") + " " + (request.version ?? "")
        reasons += QueryPlan.functionReasons(try QueryPlan.analyzeFunctions(sql: functionSQL, arguments: compiled.arguments, functions: compiled.functions, db))
        guard reasons.isEmpty else { return }

        // The statements.
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
        let order = terms.map(\.sql) + [identityIsRowid ? baseRowid : identity + " COLLATE BINARY"]
        let list = selected.joined(separator: ", ")
        let fetchSQL = "SELECT \(list) FROM \(from)\(whereClause) ORDER BY " + order.joined(separator: ", ")
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

        var comparator = SortKeyComparator(terms: [], collations: [])
        comparator.rules = terms.map(\.rule)
        let sectionRule = request.section != nil ? comparator.rules.first : nil
        if readsIdentity { comparator.rules.append(SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary)) }
        let layout = _ResultLayout(comparator: comparator, identityIsRowid: identityIsRowid, sectionRule: sectionRule, sectionsArePositional: false)

        // Joined tables: lookups from each to the base rows that meet it.
        var joins: [_JoinLookup] = []
        var notes: [String] = []
        for (offset, link) in parents.enumerated() {
            let index = offset + 1
            func path(to end: Int) -> String {
                var chain = [end]
                while let last = chain.last, last != 0 { chain.append(parents[last - 1].parent) }
                var path = "main.\(schemas[0].name.quotedIdentifier) AS \(names[0])"
                for table in chain.reversed().dropFirst() {
                    path += " JOIN main.\(schemas[table].name.quotedIdentifier) AS \(names[table]) ON \(parents[table - 1].conjunct)"
                }
                return path
            }
            // Another connection's change arrives as the joined row's key values (the change log):
            // the base rows whose foreign column equals one, compared as the ON clause compares.
            let keyIsRowid = link.key.isRowid
            let keyLookup = "SELECT \(baseRowid) FROM \(path(to: link.parent)) WHERE \(qualified(link.foreign)) COLLATE \(link.collation) IN ("
            let lookup = _JoinLookup(schema: schemas[index], alias: parsed.tables[index].visibleName, from: path(to: index), baseRowid: baseRowid,
                                     updateColumns: updateColumns(of: index, region: region),
                                     keyColumn: keyIsRowid ? nil : link.key.column, keyLookupPrefix: keyLookup)
            do {
                _ = try db.makeStatement(sql: lookup.lookup(touch: "count", where: lookup.rowCondition("NEW").replacingOccurrences(of: "NEW.", with: "\(names[index]).")))
            } catch {
                reasons.append(.joinLookupUnavailable(table: parsed.tables[index].visibleName, message: "\(error)"))
                return
            }
            joins.append(lookup)
            let foreign = link.foreign
            if !foreign.isRowid, !(try hasIndex(on: foreign.column, of: schemas[foreign.table])) {
                notes.append("no index on \(schemas[foreign.table].name)(\(foreign.column)): a change to a row of \(schemas[index].name) scans \(schemas[foreign.table].name) to find the rows that meet it")
            }
        }

        var fromTables = Set(schemas.map { $0.name.lowercased() })
        let otherTables: Set<String>
        let silentTables: [String]
        let conflictColumns: [String: Set<String>]
        do {
            otherTables = try QueryPlan.tables(readBy: region, db).subtracting(fromTables)
            (silentTables, conflictColumns) = try QueryPlan.facts(ofOtherTables: otherTables, db)
        } catch {
            throw fail(error, fetchSQL)
        }
        fromTables.remove(base.name.lowercased())
        incremental = Incremental(
            base: base, baseName: parsed.tables[0].visibleName, layout: layout, fetchSQL: fetchSQL,
            scanningFetchSQL: "SELECT \(list) FROM \(unindexedFrom)\(whereClause) ORDER BY " + order.joined(separator: ", "),
            countSQL: parsed.resultColumnsHaveParameters ? "" : "SELECT count(*) FROM \(from)\(whereClause)",
            tableCountSQL: "SELECT count(*) FROM main.\(base.name.quotedIdentifier)",
            rereadPrefixSQL: "SELECT \(list) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN (",
            columns: columns, otherTables: otherTables, conflictColumns: conflictColumns, joinedTables: fromTables, joins: joins, region: region,
            silentTables: silentTables, notes: notes,
            records: QueryPlan.RecordQuery(prefix: "SELECT \(parsed.resultColumns), \(baseRowid) FROM \(unindexedFrom) WHERE \(whereAnd)\(baseRowid) IN (",
                                           arguments: compiled.arguments, keyIsRowid: true, adapter: compiled.adapter))
    }

    /// Whether the identity is the base table's key (the default) or one of its columns.
    /// The columns of the query's tables, qualified by the names the query gives them.
    private func columnNames() -> [String] {
        zip(parsed.tables, schemas).flatMap { table, schema in schema.columns.map { table.visibleName + "." + $0.name } }
    }

    private func identifiesBaseRows() -> Bool {
        guard let given = request.identity else { return true }
        guard let reference = _ParsedSelect.columnReference(given), let resolved = resolve(reference, aliases: true) else { return false }
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
    private func resolve(_ reference: _ParsedSelect.ColumnReference, aliases: Bool) -> Resolved? {
        if let qualifier = reference.qualifier {
            guard let table = parsed.tables.firstIndex(where: { $0.visibleName.caseInsensitiveCompare(qualifier) == .orderedSame }) else { return nil }
            return column(reference.column, in: table)
        }
        if aliases, let aliased = resolveAlias(reference.column) { return aliased }
        let matches = schemas.indices.compactMap { column(reference.column, in: $0) }
        return matches.count == 1 ? matches[0] : nil
    }

    private func resolveAlias(_ name: String) -> Resolved? {
        for (index, columnName) in compiled.columnNames.enumerated() where columnName.caseInsensitiveCompare(name) == .orderedSame {
            guard let origin = compiled.origins[index] else { return nil }   // an alias of an expression
            guard origin.column.caseInsensitiveCompare(name) != .orderedSame else { continue }   // not an alias
            let tables = schemas.indices.filter { schemas[$0].name.caseInsensitiveCompare(origin.table) == .orderedSame }
            guard tables.count == 1 else { return nil }
            return column(origin.column, in: tables[0])
        }
        return nil
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
        if let reference = _ParsedSelect.columnReference(given), let resolved = resolve(reference, aliases: true) { return qualified(resolved) }
        return "(" + given + ")"
    }

    private func isUnique(_ column: String, in schema: _TableSchema) -> Bool {
        schema.primaryKey == [column] || column == schema.rowidAlias || schema.uniqueIndexes.contains { index in
            guard index.predicate == nil, index.terms.count == 1, case let .column(name, _) = index.terms[0] else { return false }
            return name == column
        }
    }

    /// The collation a unique index on `column` compares with (`nil`: no such index).
    private func uniqueCollation(_ column: String, in schema: _TableSchema) -> String? {
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
                let comparison = left.isRowid ? "BINARY" : _TableSchema.declaredCollation(db, table: schemas[left.table].name, column: left.column).sqlName
                guard comparison == "BINARY" || comparison == indexCollation else { continue }
                guard affinity(of: key) == affinity(of: foreign) else { continue }
                return (foreign.table, key, foreign, table.conditions[equality.conjunct], comparison)
            }
        }
        return nil
    }

    /// The type affinity of a column (sqlite-facts: determined by its declared type).
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

    private func hasIndex(on column: String, of schema: _TableSchema) throws(LiveQueryError) -> Bool {
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
