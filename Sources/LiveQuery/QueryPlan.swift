import GRDB
import GRDBSQLite

/// A validated request: the SQL that fetches it, how to compare its rows, which changes concern
/// it, and whether it can be maintained incrementally.
struct QueryPlan: Sendable {
    /// How the result follows the database.
    enum Mode: Sendable, Equatable {
        /// Changed rows are re-read and moved inside the index.
        case incremental
        /// Every relevant commit refetches and diffs, for the reason given.
        case refetch(reason: String)
    }

    let request: LiveQueryRequest
    let table: String
    let mode: Mode
    let comparator: SortKeyComparator
    /// SELECT identity, sort columns…, version FROM table WHERE filter ORDER BY terms…, identity.
    let fetchAllSQL: String
    /// The same columns for given rowids, up to the opening parenthesis of the IN list.
    /// `NOT INDEXED` makes SQLite look rows up by rowid instead of scanning an index that serves
    /// the filter (seen: a 100k-entry scan on every commit with an index on the filter column).
    let rereadPrefixSQL: String
    let arguments: StatementArguments
    let sortColumnCount: Int
    let hasVersionColumn: Bool
    /// What the query reads: its table's columns and any other table the filter reads.
    let region: DatabaseRegion
    let otherTables: Set<String>

    init(_ request: LiveQueryRequest, _ db: Database) throws(LiveQueryError) {
        self.request = request
        do {
            guard try db.tableExists(request.table) else { throw LiveQueryError.unknownTable(request.table) }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        let columns: [String]
        do {
            columns = try db.columns(in: request.table).map(\.name)
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        func canonical(_ column: String) throws(LiveQueryError) -> String {
            guard let match = columns.first(where: { $0.caseInsensitiveCompare(column) == .orderedSame }) else {
                throw LiveQueryError.unknownColumn(table: request.table, column: column)
            }
            return match
        }
        table = request.table
        var sortColumns: [String] = []
        for term in request.sort { sortColumns.append(try canonical(term.column)) }
        if let section = request.section {
            let column = try canonical(section)
            guard let first = sortColumns.first, first == column else {
                throw LiveQueryError.invalidRequest("the section column \(section) must be the first sort term")
            }
        }
        let versionColumn = try request.version.map { column throws(LiveQueryError) in try canonical(column) }

        // Identity: the rowid; a WITHOUT ROWID table needs a single INTEGER primary key instead.
        var identity = "rowid"
        var reasons: [String] = []
        if (try? db.makeStatement(sql: "SELECT rowid FROM \(table.quotedIdentifier) LIMIT 0")) == nil {
            let primaryKey = try? db.primaryKey(table)
            guard let primaryKey, primaryKey.columns.count == 1 else {
                throw LiveQueryError.invalidRequest("\(table) is a WITHOUT ROWID table without a single-column primary key")
            }
            identity = primaryKey.columns[0].quotedIdentifier
            reasons.append("WITHOUT ROWID tables report no row changes")
        }

        var collations: [SortTerm.Collation] = []
        for (term, column) in zip(request.sort, sortColumns) {
            let collation = term.collation ?? Self.declaredCollation(db, table: table, column: column)
            if case let .custom(name) = collation { reasons.append("custom collation \(name)") }
            collations.append(collation)
        }
        comparator = SortKeyComparator(terms: request.sort, collations: collations)
        sortColumnCount = sortColumns.count
        hasVersionColumn = versionColumn != nil

        var selected = [identity + " AS \"livelist_identity\""] + sortColumns.map(\.quotedIdentifier)
        selected.append(versionColumn?.quotedIdentifier ?? "NULL")
        let selectFrom = "SELECT " + selected.joined(separator: ", ") + " FROM " + table.quotedIdentifier
        let orderTerms = zip(request.sort, collations).map { term, collation in term.sql(collation: collation) } + ["\"livelist_identity\""]
        fetchAllSQL = selectFrom + (request.filter.map { " WHERE (\($0.sql))" } ?? "") + " ORDER BY " + orderTerms.joined(separator: ", ")
        rereadPrefixSQL = selectFrom + " NOT INDEXED WHERE " + (request.filter.map { "(\($0.sql)) AND " } ?? "") + identity + " IN ("
        arguments = request.filter?.arguments ?? StatementArguments()

        let statement: Statement
        let sql = fetchAllSQL
        do {
            statement = try db.makeStatement(sql: sql)
            try statement.validateArguments(arguments)
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(sql: sql, message: error.message ?? "\(error)")
        } catch {
            throw LiveQueryError.invalidSQL(sql: sql, message: "\(error)")
        }
        region = statement.databaseRegion
        var others = Set<String>()
        for name in (try? String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")) ?? []
        where name.caseInsensitiveCompare(table) != .orderedSame {
            if region.isModified(byEventsOfKind: .insert(tableName: name)) { others.insert(name.lowercased()) }
        }
        otherTables = others
        mode = reasons.isEmpty ? .incremental : .refetch(reason: reasons.joined(separator: "; "))
    }

    /// The collation a column was declared with (BINARY when none), as SQLite reports it.
    static func declaredCollation(_ db: Database, table: String, column: String) -> SortTerm.Collation {
        var collationName: UnsafePointer<CChar>?
        let status = sqlite3_table_column_metadata(db.sqliteConnection, nil, table, column, nil, &collationName, nil, nil, nil)
        guard status == SQLITE_OK, let collationName else { return .binary }
        switch String(cString: collationName).uppercased() {
        case "BINARY": return .binary
        case "NOCASE": return .nocase
        case "RTRIM": return .rtrim
        case let other: return .custom(other)
        }
    }

    /// Reads a fetched row into an index entry; without a version column the version starts at 0
    /// (the core hands out local revisions).
    func entry(from row: Row) -> IndexEntry {
        let rowid: Int64 = row[0]
        var values: [SQLValue] = []
        values.reserveCapacity(sortColumnCount)
        for column in 0..<sortColumnCount { values.append(SQLValue(row[column + 1] as DatabaseValue)) }
        let stored = SQLValue(row[sortColumnCount + 1] as DatabaseValue)
        return IndexEntry(key: SortKey(values), rowid: rowid, version: hasVersionColumn ? stored : .integer(0))
    }
}
