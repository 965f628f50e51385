import Foundation
import GRDB
import GRDBSQLite

/// A validated request: the SQL that fetches it, how to read and compare its rows, which changes
/// concern it, and whether it can be maintained incrementally (and why not).
struct QueryPlan: Sendable {
    /// How the result follows the database.
    enum Mode: Sendable, Equatable {
        /// Changed rows are re-read and moved inside the index.
        case incremental
        /// Every relevant commit refetches and diffs, for the reason given.
        case refetch(reason: String)
    }

    let description: String
    let table: String
    let mode: Mode
    let layout: _ResultLayout
    /// Every row in order: [rowid,] sort values…, [identity,] version.
    let fetchSQL: String
    /// The same query with the table scanned in rowid order and sorted by SQLite: cheaper than
    /// walking an index that serves the ORDER BY but not the columns, when the result is a large
    /// share of the table (a random table lookup per row).
    let scanningFetchSQL: String
    /// The number of rows the query returns, and the number of rows of the table.
    let countSQL: String
    let tableCountSQL: String
    /// The same columns for given rowids, up to the opening parenthesis of the IN list.
    /// `NOT INDEXED` makes SQLite look rows up by rowid instead of scanning an index that serves
    /// the filter (seen: a 100k-entry scan on every commit with an index on the filter column).
    let rereadPrefixSQL: String
    let arguments: StatementArguments
    let termCount: Int
    /// Whether column 0 is the base rowid (the incremental path).
    let readsRowid: Bool
    /// Whether the identity is read as a value after the sort values (else it is the rowid).
    let readsIdentity: Bool
    let hasVersionColumn: Bool
    /// Tables other than the base table that the filter reads: a change there refetches.
    let otherTables: Set<String>
    /// What the query reads, for telling which UPDATEs can be ignored.
    let region: DatabaseRegion
    let schema: _TableSchema
    /// Whether the filter depends on the current time (refetched on commits, not as time passes).
    let isTimeDependent: Bool
    /// Tables the query reads that report no row changes (WITHOUT ROWID): TEMP triggers signal
    /// their changes.
    let silentTables: [String]

    var isIncremental: Bool { mode == .incremental }

    init<ID: LiveIdentity>(_ request: LiveQueryRequest<ID>, _ db: Database) throws(LiveQueryError) {
        description = request.description
        let arguments = request.filter?.arguments ?? StatementArguments()
        self.arguments = arguments
        let schema: _TableSchema
        do {
            guard let found = try _TableSchema.read(request.table, db) else { throw LiveQueryError.unknownTable(request.table) }
            schema = found
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        self.schema = schema
        let table = schema.name
        self.table = table
        let quotedTable = table.quotedIdentifier
        func canonical(_ column: String) throws(LiveQueryError) -> String {
            guard let match = schema.columns.first(where: { $0.name.caseInsensitiveCompare(column) == .orderedSame }) else {
                throw LiveQueryError.unknownColumn(table: table, column: column)
            }
            return match.name
        }
        var sortColumns: [String] = []
        for term in request.sort { sortColumns.append(try canonical(term.column)) }
        if let section = request.section {
            let column = try canonical(section)
            guard let first = sortColumns.first, first == column else {
                throw LiveQueryError.invalidRequest("the section column \(section) must be the first sort term")
            }
        }
        let versionColumn = try request.version.map { column throws(LiveQueryError) in try canonical(column) }

        var reasons: [String] = []
        // The identity: a unique column, the rowid, or a WITHOUT ROWID table's primary key.
        let identityExpression: String
        var identityIsRowid = false
        if let identity = request.identity {
            let column = try canonical(identity)
            let isUnique = schema.primaryKey == [column] || column == schema.rowidAlias || schema.uniqueIndexes.contains { index in
                index.predicate == nil && index.terms.count == 1 && {
                    if case let .column(name, _) = index.terms[0] { return name == column }
                    return false
                }()
            }
            guard isUnique else {
                throw LiveQueryError.invalidRequest("the identity column \(column) of \(table) has no UNIQUE constraint or primary key on it alone")
            }
            identityExpression = column.quotedIdentifier
            if column == schema.rowidAlias { identityIsRowid = true }
        } else if let rowid = schema.rowidName {
            identityExpression = rowid
            identityIsRowid = true
        } else if schema.isWithoutRowid, schema.primaryKey.count == 1 {
            identityExpression = schema.primaryKey[0].quotedIdentifier
        } else {
            throw LiveQueryError.invalidRequest(schema.isWithoutRowid
                ? "\(table) is a WITHOUT ROWID table with a composite primary key: name an identity column"
                : "the columns of \(table) hide its rowid: name an identity column")
        }
        if identityIsRowid, ID(identityValue: .integer(1)) == nil {
            throw LiveQueryError.invalidRequest("rows of \(table) are identified by their rowid, an integer, which \(ID.self) cannot hold")
        }
        if schema.isWithoutRowid { reasons.append("WITHOUT ROWID tables report no row changes") }

        var collations: [SortTerm.Collation] = []
        for (term, column) in zip(request.sort, sortColumns) {
            let collation = term.collation ?? _TableSchema.declaredCollation(db, table: table, column: column)
            if case let .custom(name) = collation { reasons.append("custom collation \(name)") }
            collations.append(collation)
        }
        let termCount = sortColumns.count
        self.termCount = termCount
        hasVersionColumn = versionColumn != nil

        // What the filter reads and whether it can change without its own rows changing.
        var isTimeDependent = false
        if let filter = request.filter {
            let analysis = try Self.analyze(filter: filter, schema: schema, db)
            if analysis.readsOwnTable {
                reasons.append("the filter reads \(table) itself, so rows it did not touch can enter or leave")
            }
            if !analysis.nondeterministicFunctions.isEmpty {
                reasons.append("the filter calls \(analysis.nondeterministicFunctions.sorted().joined(separator: ", ")), which can change without a write")
            }
            isTimeDependent = analysis.isTimeDependent
            if analysis.isTimeDependent {
                reasons.append("the filter depends on the current time: it is refetched on every commit, not as time passes")
            }
        }
        self.isTimeDependent = isTimeDependent
        let mode: Mode = reasons.isEmpty ? .incremental : .refetch(reason: reasons.joined(separator: "; "))
        self.mode = mode

        // Columns read: [rowid,] sort values…, [identity,] version.
        let incremental = mode == .incremental
        readsRowid = incremental
        let readsIdentity = !(incremental && identityIsRowid)
        self.readsIdentity = readsIdentity
        var selected: [String] = []
        if incremental, let rowid = schema.rowidName { selected.append(rowid) }
        selected += sortColumns.map(\.quotedIdentifier)
        if readsIdentity { selected.append(identityExpression) }
        if let versionColumn {
            selected.append(versionColumn.quotedIdentifier)
        } else {
            selected.append(_Digest.functionName + "(" + schema.columns.map(\.name.quotedIdentifier).joined(separator: ", ") + ")")
        }
        let selectFrom = "SELECT " + selected.joined(separator: ", ") + " FROM " + quotedTable
        var orderTerms = zip(request.sort, collations).map { term, collation in term.sql(collation: collation) }
        // Ties are broken by the identity, compared as stored (BINARY), as the index does.
        orderTerms.append(identityIsRowid ? identityExpression : identityExpression + " COLLATE BINARY")
        let whereClause = request.filter.map { " WHERE (\($0.sql))" } ?? ""
        let fetchSQL = selectFrom + whereClause + " ORDER BY " + orderTerms.joined(separator: ", ")
        self.fetchSQL = fetchSQL
        scanningFetchSQL = selectFrom + " NOT INDEXED" + whereClause + " ORDER BY " + orderTerms.joined(separator: ", ")
        countSQL = "SELECT count(*) FROM \(quotedTable)" + whereClause
        tableCountSQL = "SELECT count(*) FROM \(quotedTable)"
        rereadPrefixSQL = selectFrom + " NOT INDEXED WHERE " + (request.filter.map { "(\($0.sql)) AND " } ?? "")
            + (schema.rowidName ?? "rowid") + " IN ("

        // The order: sort terms, then (when it is not the rowid) the identity, then the rowid.
        // A refetched result keeps SQLite's order: its rowids are fetch ordinals.
        var comparator = SortKeyComparator(terms: request.sort, collations: collations)
        let sectionRule = request.section != nil ? comparator.rules.first : nil
        if incremental {
            if readsIdentity { comparator.rules.append(SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary)) }
        } else {
            comparator.rules = []
        }
        layout = _ResultLayout(comparator: comparator, identityIsRowid: incremental && identityIsRowid,
                               sectionRule: sectionRule, sectionsArePositional: !incremental)

        do {
            try _Digest.register(on: db)
            let statement = try db.makeStatement(sql: fetchSQL)
            try statement.validateArguments(arguments)
            let region = statement.databaseRegion
            self.region = region
            var others = Set<String>()
            for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            where name.caseInsensitiveCompare(table) != .orderedSame {
                if region.isModified(byEventsOfKind: .insert(tableName: name)) { others.insert(name.lowercased()) }
            }
            otherTables = others
            var silent = schema.isWithoutRowid ? [table] : []
            for name in others.sorted() {
                if let other = try _TableSchema.read(name, db), other.isWithoutRowid { silent.append(other.name) }
            }
            silentTables = silent
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(sql: fetchSQL, arguments: arguments, message: error.message ?? "\(error)")
        } catch {
            throw LiveQueryError.from(error, sql: fetchSQL, arguments: arguments)
        }
    }

    /// Whether fetching the whole result is cheaper by scanning the table and letting SQLite sort
    /// than by the plan SQLite picks: when that plan walks an index for the ORDER BY but must look
    /// up every row in the table (the index does not cover the columns), and the result is at
    /// least a fifth of the table. Measured: 500k of 1M rows, 520 ms by the index, 180 ms by a scan.
    /// Any failure keeps SQLite's own plan.
    func prefersTableScan(_ db: Database) -> Bool {
        do {
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + fetchSQL, arguments: arguments).compactMap { $0["detail"] as String? }
            let walksIndex = plan.contains { $0.contains("USING INDEX") && !$0.contains("COVERING") }
            let sortsAnyway = plan.contains { $0.contains("TEMP B-TREE") }
            guard walksIndex && !sortsAnyway else { return false }
            let table = try Int.fetchOne(db, sql: tableCountSQL) ?? 0
            guard table >= 10_000 else { return false }
            let result = try Int.fetchOne(db, sql: countSQL, arguments: arguments) ?? 0
            return result * 5 >= table
        } catch {
            return false   // SQLite's own plan is always correct; this only chooses the faster one
        }
    }

    /// What a filter depends on beyond the row it is evaluated on.
    struct FilterAnalysis {
        var readsOwnTable = false
        var nondeterministicFunctions: Set<String> = []
        var isTimeDependent = false
    }

    /// Compiles `filter` over a stand-in for the table that reads nothing: if the statement still
    /// reads the table, the filter does so itself (a subquery or an aggregate over it). Functions
    /// SQLite does not flag deterministic, and date functions given `'now'`, make it depend on more
    /// than the data.
    static func analyze(filter: LiveQueryFilter, schema: _TableSchema, _ db: Database) throws(LiveQueryError) -> FilterAnalysis {
        var analysis = FilterAnalysis()
        var names = schema.columns.map(\.name)
        let lowered = Set(names.map { $0.lowercased() })
        if !schema.isWithoutRowid { names += ["rowid", "_rowid_", "oid"].filter { !lowered.contains($0) } }
        let standIn = "SELECT " + names.map { "NULL AS \($0.quotedIdentifier)" }.joined(separator: ", ")
        let probe = "SELECT 1 FROM (\(standIn)) AS \(schema.name.quotedIdentifier) WHERE (\(filter.sql))"
        do {
            let statement = try db.makeStatement(sql: probe)
            analysis.readsOwnTable = statement.databaseRegion.isModified(byEventsOfKind: .insert(tableName: schema.name))
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(sql: filter.sql, arguments: filter.arguments, message: error.message ?? "\(error)")
        } catch {
            throw LiveQueryError.from(error, sql: filter.sql, arguments: filter.arguments)
        }
        guard let tokens = _SQLTokenizer.tokens(filter.sql) else {
            throw LiveQueryError.invalidSQL(sql: filter.sql, arguments: filter.arguments, message: "unterminated literal or identifier")
        }
        let calls = _SQLTokenizer.functionCalls(tokens)
        let dateFunctions: Set<String> = ["date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"]
        let mentionsNow = tokens.contains { $0.kind == .string && $0.text.lowercased() == "'now'" }
            || filter.arguments.description.lowercased().contains("\"now\"")
        if calls.contains(where: { ["current_time", "current_date", "current_timestamp"].contains($0) })
            || (mentionsNow && !calls.isDisjoint(with: dateFunctions)) {
            analysis.isTimeDependent = true
        }
        var deterministic: [String: Bool] = [:]
        do {
            for row in try Row.fetchAll(db, sql: "SELECT name, flags FROM pragma_function_list") {
                guard let name: String = row["name"] else { continue }
                let flags: Int64 = row["flags"] ?? 0
                let isDeterministic = flags & Int64(SQLITE_DETERMINISTIC) != 0
                deterministic[name.lowercased()] = (deterministic[name.lowercased()] ?? true) && isDeterministic
            }
        } catch {
            throw LiveQueryError.from(error, sql: "SELECT name, flags FROM pragma_function_list")
        }
        for call in calls where deterministic[call] == false && !dateFunctions.contains(call) {
            analysis.nondeterministicFunctions.insert(call)
        }
        return analysis
    }

    /// Reads the current row of `statement` (a fetch or re-read of this plan) into an entry;
    /// `ordinal` numbers rows of a refetched result. A NULL identity is kept: the index reports
    /// it as an identity that does not decode.
    func entry(from statement: SQLiteStatement, ordinal: Int64) -> IndexEntry {
        var column: Int32 = 0
        var rowid = ordinal
        if readsRowid {
            rowid = sqlite3_column_int64(statement, 0)
            column = 1
        }
        var values: [SQLValue] = []
        values.reserveCapacity(termCount + 1)
        for _ in 0..<termCount {
            values.append(SQLValue(statement: statement, column: column))
            column += 1
        }
        if readsIdentity {
            values.append(SQLValue(statement: statement, column: column))
            column += 1
        }
        var digest = _Digest()
        if hasVersionColumn {
            digest.combine(SQLValue(statement: statement, column: column))
        } else {
            digest.combine(.integer(sqlite3_column_int64(statement, column)))
        }
        let key = values.isEmpty ? SortKey.single(.integer(rowid)) : SortKey(values)
        for value in values { digest.combine(value) }
        return IndexEntry(key: key, rowid: rowid, token: digest.value)
    }
}
