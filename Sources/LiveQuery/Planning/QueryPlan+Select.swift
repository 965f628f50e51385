import Foundation
import GRDB
import GRDBSQLite
import LiveQueryCore

/// Plans for a SELECT given as SQL or as a GRDB request.
///
/// A SELECT whose FROM clause is a rowid table joined (INNER or LEFT) to tables it meets at most
/// once — through an equality between a unique column of the joined table and a column of an
/// earlier table, compared without conversion — and whose ORDER BY terms are columns is maintained
/// incrementally: the base table's changed rows are re-read through the whole query, and TEMP
/// triggers map a joined row's change to the base rows that meet it (``JoinLookup``). Anything
/// else runs as written and refetches, for a reason the plan names.
extension QueryPlan {
    /// Plans `request`, whose identity, section and version are text (expressions rendered).
    init<ID: LiveIdentity>(select source: SelectSource, request: LiveQueryRequest<ID>, _ db: Database) throws(LiveQueryError) {
        let compiled = try CompiledSelect(source, db)
        var planner = SelectPlanner(compiled: compiled, request: request, identityHoldsIntegers: ID(identityValue: .integer(1)) != nil, db: db)
        try planner.plan()
        guard let incremental = planner.incremental else {
            try self.init(positional: compiled, request: request, reasons: planner.reasons, db)
            return
        }
        self.init(
            description: request.description, table: incremental.base.name, tableName: incremental.baseName, mode: .incremental, layout: incremental.layout,
            fetchSQL: incremental.fetchSQL, scanningFetchSQL: incremental.scanningFetchSQL, countSQL: incremental.countSQL,
            tableCountSQL: incremental.tableCountSQL, rereadPrefixSQL: incremental.rereadPrefixSQL, arguments: compiled.arguments,
            columns: incremental.columns, hasVersionColumn: request.version != nil, otherTables: incremental.otherTables,
            conflictColumns: incremental.conflictColumns, joinedTables: incremental.joinedTables, joins: incremental.joins, region: incremental.region, schema: incremental.base,
            silentTables: incremental.silentTables, notes: incremental.notes, records: incremental.records)
    }

    /// A SELECT run as written and refetched on every commit that touches a table it reads:
    /// identity, section and version are result columns, named as SQLite names them.
    private init<ID: LiveIdentity>(positional compiled: CompiledSelect, request: LiveQueryRequest<ID>, reasons: [RefetchReason.Shape],
                                   _ db: Database) throws(LiveQueryError) {
        func resultColumn(_ name: String, role: InvalidRequest.Role) throws(LiveQueryError) -> Int32 {
            guard let index = compiled.resultColumn(named: name) else {
                throw LiveQueryError.invalidRequest(.noSuchColumn(role: role, name: name, available: compiled.columnNames))
            }
            return index
        }
        let identityColumn: Int32
        if let identity = request.identity {
            identityColumn = try resultColumn(identity, role: .identity)
        } else if let index = try compiled.defaultIdentityColumn(db) {
            identityColumn = index
        } else {
            throw LiveQueryError.invalidRequest(.identityRequired(table: nil, because: .computedRows, available: compiled.columnNames))
        }
        var key: [Int32] = []
        if let section = request.section { key.append(try resultColumn(section, role: .section)) }
        if request.version != nil {
            // A version stands for the rest of the row, not for its place: a change of an ORDER BY
            // column is a change of content, as on the incremental path (whose sort values are
            // part of each row's token).
            for term in compiled.parsed.order {
                let name = (term.column.qualifier.map { $0 + "." } ?? "") + term.column.column
                if let column = compiled.resultColumn(named: name), !key.contains(column), column != identityColumn { key.append(column) }
            }
        }
        key.append(identityColumn)
        let content: Columns.Content = if let version = request.version {
            .version(try resultColumn(version, role: .version))
        } else {
            .digest(0..<Int32(compiled.columnNames.count))
        }
        let otherTables: Set<String>
        let silentTables: [String]
        let conflictColumns: [String: Set<String>]
        do {
            otherTables = try Self.tables(readBy: compiled.region, db)
            (silentTables, conflictColumns) = try Self.facts(ofOtherTables: otherTables, db)
        } catch {
            throw LiveQueryError.from(error, sql: compiled.sql, arguments: compiled.arguments)
        }
        let identityName = compiled.columnNames[Int(identityColumn)].quotedIdentifier
        self.init(
            description: request.description, table: "", tableName: "", mode: .refetch(reasons),
            layout: ResultLayout(
                ordering: SortKeyComparator(terms: [], collations: []), identityIsRowid: false,
                sections: request.section != nil ? SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary) : nil,
                sectionsArePositional: true),
            fetchSQL: compiled.sql, scanningFetchSQL: compiled.sql, countSQL: "", tableCountSQL: "", rereadPrefixSQL: "",
            arguments: compiled.arguments, columns: Columns(rowid: nil, key: key, content: content), hasVersionColumn: request.version != nil,
            otherTables: otherTables, conflictColumns: conflictColumns, joinedTables: [], joins: [], region: compiled.region, schema: nil,
            silentTables: silentTables, notes: [],
            records: RecordQuery(prefix: "SELECT *, \(identityName) FROM (\(compiled.sql)) WHERE \(identityName) IN (",
                                 arguments: compiled.arguments, keyIsRowid: false, adapter: compiled.adapter,
                                 payloadPrefix: "SELECT *, \(identityName) FROM (\(compiled.sql)) WHERE \(identityName) IN (",
                                 payloadColumns: Columns(rowid: nil, key: key, content: content),
                                 valueColumns: 0..<Int32(compiled.columnNames.count), columnNames: compiled.columnNames))
    }
}
