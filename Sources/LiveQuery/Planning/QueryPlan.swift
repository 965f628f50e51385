import Foundation
import GRDB
import GRDBSQLite
import LiveQueryCore

/// A validated request: the SQL that fetches it, how to read and compare its rows, which changes
/// concern it, and whether it can be maintained incrementally (and why not).
struct QueryPlan: Sendable {
    /// How the result follows the database.
    enum Mode: Sendable, Equatable {
        /// Changed rows are re-read and moved inside the index.
        case incremental
        /// Every relevant commit refetches and diffs: the request has these shapes.
        case refetch([RefetchReason.Shape])

        /// Why each relevant commit refetches (`nil` when the plan is incremental).
        var refetchReason: RefetchReason? {
            if case let .refetch(shapes) = self { return .request(shapes) }
            return nil
        }
    }

    /// Where a fetched row's parts are among the statement's columns.
    struct Columns: Sendable {
        /// How a row's content token is read.
        enum Content: Sendable {
            /// A version value.
            case version(Int32)
            /// Columns digested as stored.
            case digest(Range<Int32>)
        }

        /// The base table's rowid (the incremental path); `nil`: rows are numbered in fetch order.
        var rowid: Int32?
        /// The sort values, then the identity when it is not the rowid.
        var key: [Int32]
        var content: Content
    }

    /// How to load rows' content (records) by rowid or by identity: `prefix` + placeholders +
    /// `)`; the statement's last column is the rowid or identity the row answers for.
    struct RecordQuery: Sendable {
        var prefix: String
        var arguments: StatementArguments
        var keyIsRowid: Bool
        var adapter: (any RowAdapter)?
        /// Rows with their content token, for reads that must be exact at a version (the
        /// server's payloads): `payloadPrefix` + placeholders + `)` reads every column
        /// `payloadColumns` needs and the query's own columns at `valueColumns`, keyed like
        /// `prefix` (by the last column when the key is the identity).
        var payloadPrefix: String
        var payloadColumns: Columns
        var valueColumns: Range<Int32>
        var columnNames: [String]
    }

    let description: String
    /// The table whose rows the result follows (the first of the FROM clause); empty for a
    /// SELECT read only as a whole.
    let table: String
    /// The base table's name in the statements (its alias, when it has one), as EXPLAIN shows it.
    let tableName: String
    let mode: Mode
    let layout: ResultLayout
    /// Every row in order.
    let fetchSQL: String
    /// The same query with the base table scanned in rowid order and sorted by SQLite: cheaper than
    /// walking an index that serves the ORDER BY but not the columns, when the result is a large
    /// share of the table (a random table lookup per row).
    let scanningFetchSQL: String
    /// The number of rows the query returns, and the number of rows of the base table.
    let countSQL: String
    let tableCountSQL: String
    /// The same columns for given rowids, up to the opening parenthesis of the IN list.
    /// `NOT INDEXED` makes SQLite look rows up by rowid instead of scanning an index that serves
    /// the filter (seen: a 100k-entry scan on every commit with an index on the filter column).
    let rereadPrefixSQL: String
    let arguments: StatementArguments
    let columns: Columns
    let hasVersionColumn: Bool
    /// Tables the query reads besides the base table and its many-to-one joins: a change there
    /// refetches.
    let otherTables: Set<String>
    /// For each of `otherTables`, the columns (lowercased) an UPDATE OR REPLACE of which can
    /// delete a row that conflicts on a unique index; `["*"]` for any column.
    let conflictColumns: [String: Set<String>]
    /// Joined tables whose changes TEMP triggers map to the result rows that meet them.
    let joinedTables: Set<String>
    let joins: [JoinLookup]
    /// What the query reads, for telling which UPDATEs can be ignored.
    let region: DatabaseRegion
    /// The base table (`nil` for a SELECT read only as a whole).
    let schema: TableSchema?
    /// Tables the query reads that report no row changes (WITHOUT ROWID): TEMP triggers signal
    /// their changes.
    let silentTables: [String]
    /// What a developer should know: a missing index that makes a joined row's change scan.
    let notes: [String]
    let records: RecordQuery

    var isIncremental: Bool { mode == .incremental }

    /// Every table the query reads, lowercased: the base table, the joined ones and the others.
    var readTables: Set<String> {
        otherTables.union(joinedTables).union(table.isEmpty ? [] : [table.lowercased()])
    }

    /// The first `limit` rows (the first screen): a SELECT run as written is wrapped, as its own
    /// SQL may end with a LIMIT already.
    func fetchSQL(limit: Int) -> String {
        schema == nil ? "SELECT * FROM (\(fetchSQL)) LIMIT \(limit)" : fetchSQL + " LIMIT \(limit)"
    }
    var readsRowid: Bool { columns.rowid != nil }

    /// A plan from its parts (for the SELECT planner).
    init(
        description: String,
        table: String,
        tableName: String,
        mode: Mode,
        layout: ResultLayout,
        fetchSQL: String,
        scanningFetchSQL: String,
        countSQL: String,
        tableCountSQL: String,
        rereadPrefixSQL: String,
        arguments: StatementArguments,
        columns: Columns,
        hasVersionColumn: Bool,
        otherTables: Set<String>,
        conflictColumns: [String: Set<String>],
        joinedTables: Set<String>,
        joins: [JoinLookup],
        region: DatabaseRegion,
        schema: TableSchema?,
        silentTables: [String],
        notes: [String],
        records: RecordQuery
    ) {
        self.description = description
        self.table = table
        self.tableName = tableName
        self.mode = mode
        var layout = layout
        layout.records = records
        self.layout = layout
        self.fetchSQL = fetchSQL
        self.scanningFetchSQL = scanningFetchSQL
        self.countSQL = countSQL
        self.tableCountSQL = tableCountSQL
        self.rereadPrefixSQL = rereadPrefixSQL
        self.arguments = arguments
        self.columns = columns
        self.hasVersionColumn = hasVersionColumn
        self.otherTables = otherTables
        self.conflictColumns = conflictColumns
        self.joinedTables = joinedTables
        self.joins = joins
        self.region = region
        self.schema = schema
        self.silentTables = silentTables
        self.notes = notes
        self.records = records
    }

    /// The identity as the request named it (an expression's SQL), or `nil` for the default: for
    /// messages.
    private(set) var identityName: String?

    /// Validates `request` against the schema and plans it.
    init<ID: LiveIdentity>(_ given: LiveQueryRequest<ID>, _ db: Database) throws(LiveQueryError) {
        var request = given
        if let expressions = request.select?.expressions {
            // Identity, section and version given as GRDB expressions: their SQL, as GRDB writes it.
            do {
                (request.identity, request.section, request.version) = try expressions(db)
            } catch {
                throw LiveQueryError.invalidRequest(.cannotCompile(message: "\(error)"))
            }
        }
        let select: SelectSource
        if let given = request.select {
            select = given
        } else {
            (select, request) = try request.lowered(db)
        }
        try self.init(select: select, request: request, db)
        identityName = request.identity
    }

    /// The tables of the main schema that `region` reads, lowercased.
    static func tables(readBy region: DatabaseRegion, _ db: Database) throws -> Set<String> {
        var tables = Set<String>()
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        where region.isModified(byEventsOfKind: .insert(tableName: name)) {
            tables.insert(name.lowercased())
        }
        return tables
    }

    /// What the live query must know of the other tables it reads (one schema read each): those
    /// WITHOUT ROWID (no row events: TEMP triggers signal them), by their declared names; and for
    /// each, the columns whose UPDATE can delete another row by REPLACE (those of its unique
    /// indexes and its rowid alias), lowercased — `["*"]` when an index has expressions.
    static func facts(ofOtherTables tables: Set<String>, _ db: Database) throws -> (silent: [String], conflictColumns: [String: Set<String>]) {
        var silent: [String] = []
        var conflictColumns: [String: Set<String>] = [:]
        for name in tables.sorted() {
            guard let schema = try TableSchema.read(name, db) else { continue }
            if schema.isWithoutRowid { silent.append(schema.name) }
            var columns = Set<String>()
            if let alias = schema.rowidAlias { columns.insert(alias.lowercased()) }
            for index in schema.uniqueIndexes {
                for term in index.terms {
                    switch term {
                    case let .column(column, _): columns.insert(column.lowercased())
                    case .expression: columns.insert("*")
                    }
                }
                if index.predicate != nil { columns.insert("*") }
            }
            conflictColumns[name] = columns
        }
        return (silent, conflictColumns)
    }

    /// Whether fetching the whole result is cheaper by scanning the table and letting SQLite sort
    /// than by the plan SQLite picks: when that plan walks an index for the ORDER BY but must look
    /// up every row in the table (the index does not cover the columns), and the result is at
    /// least a fifth of the table. Measured: 500k of 1M rows, 520 ms by the index, 180 ms by a scan.
    /// Any failure keeps SQLite's own plan.
    func prefersTableScan(_ db: Database) -> Bool {
        guard readsRowid, !countSQL.isEmpty else { return false }
        do {
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + fetchSQL, arguments: arguments).compactMap { $0["detail"] as String? }
            // The base table's own step (joined tables are looked up by key, whatever the plan).
            let walksIndex = plan.contains { detail in
                (detail.hasPrefix("SCAN \(tableName) ") || detail.hasPrefix("SEARCH \(tableName) "))
                    && detail.contains("USING INDEX") && !detail.contains("COVERING")
            }
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

    /// Why the functions `sql` calls make it depend on more than its rows: functions SQLite does
    /// not flag deterministic (`random()`, the app's impure ones), and reading the current time
    /// (date functions given `'now'`, in the SQL or by `arguments`; CURRENT_TIME…). Aggregates and
    /// the clock's readers are not called nondeterministic: the rows an aggregate reads decide it,
    /// and reading the clock is ``RefetchReason/Shape/currentTime``.
    static func functionShapes(sql: String, arguments: StatementArguments, functions: SQLFunctions, _ db: Database)
        throws(LiveQueryError) -> [RefetchReason.Shape]
    {
        guard let tokens = SQLTokenizer.tokens(sql) else {
            throw LiveQueryError.invalidSQL(DatabaseFailure(DatabaseError(resultCode: .SQLITE_ERROR, message: "unterminated literal or identifier",
                                                                          sql: sql, arguments: arguments)))
        }
        let calls = SQLTokenizer.functionCalls(tokens)
        var shapes: [RefetchReason.Shape] = []
        let nondeterministic = functions.nondeterministicScalars.subtracting(CurrentTime.dateFunctions).subtracting(CurrentTime.keywords)
        let called = calls.intersection(nondeterministic)
        if !called.isEmpty { shapes.append(.nondeterministicFunctions(called.sorted())) }
        if CurrentTime.isRead(tokens: tokens, calls: calls, arguments: arguments, db) { shapes.append(.currentTime) }
        return shapes
    }

    /// Reads the current row of `statement` (a fetch or re-read of this plan) into an entry;
    /// `ordinal` numbers rows of a refetched result. A NULL identity is kept: the index reports
    /// it as an identity that does not decode.
    func entry(from statement: SQLiteStatement, ordinal: Int64) -> IndexEntry {
        columns.entry(from: statement, ordinal: ordinal)
    }
}

extension QueryPlan.Columns {
    /// Reads the current row of `statement` (a fetch, re-read or payload read) into an entry.
    func entry(from statement: SQLiteStatement, ordinal: Int64) -> IndexEntry {
        let columns = self
        let rowid = columns.rowid.map { sqlite3_column_int64(statement, $0) } ?? ordinal
        var values: [SQLValue] = []
        values.reserveCapacity(columns.key.count)
        for column in columns.key { values.append(SQLValue(statement: statement, column: column)) }
        var digest = ContentDigest()
        switch columns.content {
        case let .version(column): digest.combine(SQLValue(statement: statement, column: column))
        case let .digest(range): for column in range { digest.combine(column: column, of: statement) }
        }
        let key = values.isEmpty ? SortKey.single(.integer(rowid)) : SortKey(values)
        for value in values { digest.combine(value) }
        return IndexEntry(key: key, rowid: rowid, token: digest.value)
    }
}

extension ResultLayout {
    /// How SQLite loads this layout's rows as records.
    var recordQuery: QueryPlan.RecordQuery? { records as? QueryPlan.RecordQuery }
}
