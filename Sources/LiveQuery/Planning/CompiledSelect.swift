import GRDB
import GRDBSQLite
import LiveQueryCore

/// A SELECT compiled by SQLite: its SQL and arguments, result column names and origins.
struct CompiledSelect {
    let sql: String
    let arguments: StatementArguments
    let adapter: (any RowAdapter)?
    let columnNames: [String]
    /// For each result column that is a plain column of a table: that table and column.
    let origins: [(table: String, column: String)?]
    let region: DatabaseRegion
    /// The connection's functions (the app's own included), as SQLite reports them.
    let functions: SQLFunctions
    let parsed: ParsedSelect

    init(_ source: SelectSource, _ db: Database) throws(LiveQueryError) {
        var sql: String
        let prepared: PreparedSelect
        do {
            prepared = try source.prepare(db)
        } catch let error as DatabaseError {
            throw LiveQueryError.invalidSQL(error, sql: source.summary, arguments: StatementArguments())
        } catch {
            throw LiveQueryError.invalidRequest(.cannotCompile(message: "\(error)"))
        }
        guard !prepared.prefetchesToMany else { throw LiveQueryError.invalidRequest(.prefetchesToMany) }
        (sql, arguments, adapter) = (prepared.sql, prepared.arguments, prepared.adapter)
        // A trailing semicolon would end the subqueries LiveList wraps the SELECT in.
        while let last = sql.last, last == ";" || last.isWhitespace { sql.removeLast() }
        self.sql = sql
        do {
            let statement = try db.makeStatement(sql: sql)
            try statement.validateArguments(arguments)
            guard statement.isReadonly, statement.columnCount > 0 else {
                throw LiveQueryError.invalidRequest(.notASelect(sql: sql))
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
            throw LiveQueryError.invalidSQL(error, sql: sql, arguments: arguments)
        } catch {
            throw LiveQueryError.from(error, sql: sql, arguments: arguments)
        }
        do {
            functions = try SQLFunctions.read(db)
        } catch {
            throw LiveQueryError.from(error, sql: SQLFunctions.listSQL)
        }
        parsed = ParsedSelect(sql, functions: functions)
    }

    /// The result column called `name` — exactly, else by its last part (`album.title` finds
    /// `title`, preferring a column that comes from table `album`).
    func resultColumn(named name: String) -> Int32? {
        if let index = columnNames.firstIndex(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) { return Int32(index) }
        guard let reference = ParsedSelect.columnReference(name) else { return nil }
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
            let found: TableSchema?
            do {
                found = try TableSchema.read(origin.table, db)
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
