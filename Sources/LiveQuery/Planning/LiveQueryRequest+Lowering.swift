import GRDB
import LiveQueryCore

/// A table request — a table, a filter, sort terms, section and version columns — is a SELECT
/// written for the user: lowered to one here, it is planned by the one planner every request
/// goes through (``QueryPlan``), after the checks only a table request can fail (a table or
/// column that does not exist, an identity column without a UNIQUE constraint, a section that is
/// not the first sort term).
extension LiveQueryRequest {
    /// The request as a SELECT over its table:
    /// `SELECT *[, rowid] FROM t WHERE (filter) ORDER BY terms…, identity`. The identity closes the
    /// ORDER BY, so that a query that is refetched keeps the same total order as one that is not.
    func lowered(_ db: Database) throws(LiveQueryError) -> (select: SelectSource, request: LiveQueryRequest) {
        let found: TableSchema?
        do {
            found = try TableSchema.read(table, db)
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        guard let schema = found else { throw LiveQueryError.unknownTable(table) }
        func canonical(_ column: String) throws(LiveQueryError) -> String {
            guard let match = schema.columns.first(where: { $0.name.caseInsensitiveCompare(column) == .orderedSame }) else {
                throw LiveQueryError.unknownColumn(table: schema.name, column: column)
            }
            return match.name
        }
        var terms: [SortTerm] = []
        for term in sort {
            var term = term
            term.column = try canonical(term.column)
            terms.append(term)
        }
        let section = try section.map { column throws(LiveQueryError) in try canonical(column) }
        if let section, terms.first?.column != section {
            throw LiveQueryError.invalidRequest(.sectionNotFirstSortTerm(section: self.section ?? section, firstTerm: sort.first?.column))
        }
        let version = try version.map { column throws(LiveQueryError) in try canonical(column) }
        let identity = try Self.identity(identity, of: schema, canonical: canonical)

        var columns = "*"
        if identity.isRowid, schema.rowidAlias == nil { columns += ", " + identity.column }
        var sql = "SELECT \(columns) FROM \(schema.name.quotedIdentifier)"
        if let filter { sql += " WHERE (\(filter.sql))" }
        let order = terms.map { $0.sql(collation: $0.collation) } + [identity.isRowid ? identity.column : identity.column + " COLLATE BINARY"]
        sql += " ORDER BY " + order.joined(separator: ", ")

        let arguments = filter?.arguments ?? StatementArguments()
        let statement = sql
        let select = SelectSource(summary: statement) { _ in
            PreparedSelect(sql: statement, arguments: arguments, adapter: nil, prefetchesToMany: false)
        }
        var lowered = self   // keeps its table, filter and sort for its description
        (lowered.select, lowered.identity) = (select, identity.column)
        (lowered.section, lowered.version) = (section?.quotedIdentifier, version?.quotedIdentifier)
        return (select, lowered)
    }

    /// The identity of a table request's rows, as a column of the SELECT: the column named, the
    /// rowid, or a WITHOUT ROWID table's single-column primary key.
    private static func identity(_ given: String?, of schema: TableSchema,
                                 canonical: (String) throws(LiveQueryError) -> String) throws(LiveQueryError) -> (column: String, isRowid: Bool) {
        if let given {
            let column = try canonical(given)
            guard schema.isUnique(column) else { throw LiveQueryError.invalidRequest(.identityNotUnique(identity: column, table: schema.name)) }
            return (column.quotedIdentifier, column == schema.rowidAlias)
        }
        if let alias = schema.rowidAlias { return (alias.quotedIdentifier, true) }
        if let rowid = schema.rowidName { return (rowid, true) }
        if schema.isWithoutRowid, schema.primaryKey.count == 1 { return (schema.primaryKey[0].quotedIdentifier, false) }
        throw LiveQueryError.invalidRequest(.identityRequired(
            table: schema.name, because: schema.isWithoutRowid ? .compositePrimaryKey : .rowidHidden, available: schema.columns.map(\.name)))
    }
}
