import GRDB
import LiveQueryCore

extension SelectPlanner {
    /// The rows' table, identity and filter (``ResultSource``), when the query reads one table,
    /// its identity is one of the table's columns, and its WHERE is comparisons of the table's
    /// columns with values (literals, named parameters) joined by AND that compare without
    /// conversion; `nil` otherwise.
    func statedSource(identity: Identity) -> ResultSource? {
        guard schemas.count == 1, let plain = plainColumns, let identityColumn = identityColumn(identity) else { return nil }
        let facts: TableFacts
        do {
            facts = try TableFacts.read(schemas[0], db)
        } catch {
            return nil   // The plan stands without a source: clients show no derived pending rows.
        }
        let tokens = (parsed.whereClause.flatMap { SQLTokenizer.tokens($0) } ?? []).map(\.statementToken)
        guard parsed.whereClause == nil || !tokens.isEmpty, let arguments = namedArguments(in: tokens) else { return nil }
        let names = Set([parsed.tables[0].name, parsed.tables[0].visibleName])
        guard case let .success(filter) = StatementAnalysis.filter(tokens, table: facts, names: names, arguments: { arguments[$0] }) else { return nil }
        return ResultSource(table: facts.name, identity: identityColumn, columns: plain.map { $0.flatMap { $0.isRowid && $0.column != schemas[0].rowidAlias ? nil : $0.column } },
                            filter: filter)
    }

    /// The table column that is the identity: the column named, the rowid's alias, or the
    /// single-column primary key (`nil`: the rowid itself, or an expression).
    private func identityColumn(_ identity: Identity) -> String? {
        let base = schemas[0]
        if request.identity != nil {
            guard let column = identity.column, column.table == 0 else { return nil }
            return column.isRowid ? base.rowidAlias : column.column
        }
        if identity.isRowid { return base.rowidAlias }
        return base.primaryKey.count == 1 ? base.primaryKey[0] : nil
    }

    /// The values of the named parameters `tokens` use, read by binding the query's arguments
    /// to a SELECT of them (`nil` when they do not bind: positional arguments).
    private func namedArguments(in tokens: [StatementToken]) -> [String: SQLValue]? {
        var names: [String] = []
        for case let .parameter(name) in tokens where !names.contains(name) { names.append(name) }
        guard !names.isEmpty else { return [:] }
        do {
            let sql = "SELECT " + names.map { ":" + $0 }.joined(separator: ", ")
            guard let row = try Row.fetchOne(db, sql: sql, arguments: compiled.arguments) else { return nil }
            var values: [String: SQLValue] = [:]
            for (index, name) in names.enumerated() { values[name] = SQLValue(row[index] as DatabaseValue) }
            return values
        } catch {
            return nil   // Positional arguments, or names written with another prefix: no source.
        }
    }
}
