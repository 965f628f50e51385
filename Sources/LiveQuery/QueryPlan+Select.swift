import Foundation
import GRDB
import GRDBSQLite

/// Plans for a SELECT given as SQL or as a GRDB request.
///
/// A SELECT whose FROM clause is a rowid table joined (INNER or LEFT) to tables it meets at most
/// once — through an equality between a unique column of the joined table and a column of an
/// earlier table, compared without conversion — and whose ORDER BY terms are columns is maintained
/// incrementally: the base table's changed rows are re-read through the whole query, and TEMP
/// triggers map a joined row's change to the base rows that meet it (``_JoinLookup``). Anything
/// else runs as written and refetches, for a reason the plan names.
extension QueryPlan {
    init<ID: LiveIdentity>(select source: _SelectSource, request: LiveQueryRequest<ID>, _ db: Database) throws(LiveQueryError) {
        let compiled = try _CompiledSelect(source, db)
        var planner = _SelectPlanner(compiled: compiled, request: request, identityHoldsIntegers: ID(identityValue: .integer(1)) != nil, db: db)
        try planner.plan()
        guard let incremental = planner.incremental else {
            try self.init(positional: compiled, request: request, reasons: planner.reasons, db)
            return
        }
        self.init(
            description: request.description, table: incremental.base.name, mode: .incremental, layout: incremental.layout,
            fetchSQL: incremental.fetchSQL, scanningFetchSQL: incremental.scanningFetchSQL, countSQL: incremental.countSQL,
            tableCountSQL: incremental.tableCountSQL, rereadPrefixSQL: incremental.rereadPrefixSQL, arguments: compiled.arguments,
            columns: incremental.columns, hasVersionColumn: request.version != nil, otherTables: incremental.otherTables,
            conflictColumns: incremental.conflictColumns, joinedTables: incremental.joinedTables, joins: incremental.joins, region: incremental.region, schema: incremental.base,
            isTimeDependent: false, silentTables: incremental.silentTables, notes: incremental.notes, records: incremental.records)
    }

    /// A SELECT run as written and refetched on every commit that touches a table it reads:
    /// identity, section and version are result columns, named as SQLite names them.
    private init<ID: LiveIdentity>(positional compiled: _CompiledSelect, request: LiveQueryRequest<ID>, reasons: [String],
                                   _ db: Database) throws(LiveQueryError) {
        func resultColumn(_ name: String, role: String) throws(LiveQueryError) -> Int32 {
            guard let index = compiled.resultColumn(named: name) else {
                throw LiveQueryError.invalidRequest("the \(role) \(name) is not a column of the result (\(compiled.columnNames.joined(separator: ", ")))")
            }
            return index
        }
        let identityColumn: Int32
        if let identity = request.identity {
            identityColumn = try resultColumn(identity, role: "identity")
        } else if let index = try compiled.defaultIdentityColumn(db) {
            identityColumn = index
        } else {
            throw LiveQueryError.invalidRequest("name the identity: a result column whose value is unique in the result (\(compiled.columnNames.joined(separator: ", ")))")
        }
        var key: [Int32] = []
        if let section = request.section { key.append(try resultColumn(section, role: "section")) }
        key.append(identityColumn)
        let content: Columns.Content = if let version = request.version {
            .version(try resultColumn(version, role: "version"))
        } else {
            .digest(0..<Int32(compiled.columnNames.count))
        }
        let otherTables: Set<String>
        let silentTables: [String]
        let conflictColumns: [String: Set<String>]
        do {
            otherTables = try Self.tables(readBy: compiled.region, db)
            silentTables = try Self.withoutRowidTables(among: otherTables, db)
            conflictColumns = try Self.conflictColumns(of: otherTables, db)
        } catch {
            throw LiveQueryError.from(error, sql: compiled.sql, arguments: compiled.arguments)
        }
        let identityName = compiled.columnNames[Int(identityColumn)].quotedIdentifier
        self.init(
            description: request.description, table: "", mode: .refetch(reason: reasons.joined(separator: "; ")),
            layout: _ResultLayout(
                comparator: SortKeyComparator(terms: [], collations: []), identityIsRowid: false,
                sectionRule: request.section != nil ? SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary) : nil,
                sectionsArePositional: true),
            fetchSQL: compiled.sql, scanningFetchSQL: compiled.sql, countSQL: "", tableCountSQL: "", rereadPrefixSQL: "",
            arguments: compiled.arguments, columns: Columns(rowid: nil, key: key, content: content), hasVersionColumn: request.version != nil,
            otherTables: otherTables, conflictColumns: conflictColumns, joinedTables: [], joins: [], region: compiled.region, schema: nil,
            isTimeDependent: try Self.analyzeFunctions(sql: compiled.sql, arguments: compiled.arguments, db).isTimeDependent,
            silentTables: silentTables, notes: [],
            records: RecordQuery(prefix: "SELECT *, \(identityName) FROM (\(compiled.sql)) WHERE \(identityName) IN (",
                                 arguments: compiled.arguments, keyIsRowid: false, adapter: compiled.adapter))
    }
}

/// A SELECT compiled by SQLite: its SQL and arguments, result column names and origins.
struct _CompiledSelect {
    let sql: String
    let arguments: StatementArguments
    let adapter: (any RowAdapter)?
    let columnNames: [String]
    /// For each result column that is a plain column of a table: that table and column.
    let origins: [(table: String, column: String)?]
    let region: DatabaseRegion
    let parsed: _ParsedSelect

    init(_ source: _SelectSource, _ db: Database) throws(LiveQueryError) {
        var sql: String
        do {
            (sql, arguments, adapter) = try source.prepare(db)
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(sql: error.sql ?? source.summary, arguments: error.arguments ?? StatementArguments(),
                                            message: error.message ?? "\(error)")
        } catch {
            throw LiveQueryError.invalidRequest("the request cannot be compiled: \(error)")
        }
        // A trailing semicolon would end the subqueries LiveList wraps the SELECT in.
        while let last = sql.last, last == ";" || last.isWhitespace { sql.removeLast() }
        self.sql = sql
        do {
            try _Digest.register(on: db)
            let statement = try db.makeStatement(sql: sql)
            try statement.validateArguments(arguments)
            guard statement.isReadonly, statement.columnCount > 0 else {
                throw LiveQueryError.invalidRequest("a live query needs a SELECT: \(sql)")
            }
            columnNames = statement.columnNames
            origins = (0..<Int32(statement.columnCount)).map { index in
                let handle = statement.sqliteStatement
                guard let table = sqlite3_column_table_name(handle, index), let column = sqlite3_column_origin_name(handle, index) else { return nil }
                return (String(cString: table), String(cString: column))
            }
            region = statement.databaseRegion
        } catch let error as LiveQueryError {
            throw error
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(sql: sql, arguments: arguments, message: error.message ?? "\(error)")
        } catch {
            throw LiveQueryError.from(error, sql: sql, arguments: arguments)
        }
        parsed = _ParsedSelect(sql)
    }

    /// The result column called `name` — exactly, else by its last part (`album.title` finds
    /// `title`, preferring a column that comes from table `album`).
    func resultColumn(named name: String) -> Int32? {
        if let index = columnNames.firstIndex(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) { return Int32(index) }
        guard let reference = _ParsedSelect.columnReference(name) else { return nil }
        let candidates = columnNames.indices.filter { columnNames[$0].caseInsensitiveCompare(reference.column) == .orderedSame }
        if let qualifier = reference.qualifier, let match = candidates.first(where: { origins[$0]?.table.caseInsensitiveCompare(qualifier) == .orderedSame }) {
            return Int32(match)
        }
        return candidates.first.map { Int32($0) }
    }

    /// The result column that holds the primary key (or INTEGER PRIMARY KEY) of the first table
    /// of the FROM clause — or, when the FROM clause could not be read, of the first table a
    /// result column comes from.
    func defaultIdentityColumn(_ db: Database) throws(LiveQueryError) -> Int32? {
        var keys: [Int32] = []
        for (index, origin) in origins.enumerated() {
            guard let origin else { continue }
            if let first = parsed.tables.first, first.name.caseInsensitiveCompare(origin.table) != .orderedSame { continue }
            let found: _TableSchema?
            do {
                found = try _TableSchema.read(origin.table, db)
            } catch {
                throw LiveQueryError.from(error, sql: sql, arguments: arguments)
            }
            guard let schema = found else { continue }
            let key = schema.rowidAlias ?? (schema.primaryKey.count == 1 ? schema.primaryKey[0] : nil)
            if let key, key.caseInsensitiveCompare(origin.column) == .orderedSame { keys.append(Int32(index)) }
        }
        return keys.first
    }
}
