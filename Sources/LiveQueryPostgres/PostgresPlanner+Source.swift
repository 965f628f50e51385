import LiveQueryCore

extension PostgresPlanner {
    /// The rows' table, identity and filter (``LiveQueryCore/ResultSource``) of a query followed
    /// row by row over one table, not grouped, whose WHERE is comparisons of the table's columns
    /// with values or arguments joined by AND that compare as sent; `nil` otherwise.
    func statedSource(_ incremental: Incremental, _ parsed: PostgresParsedSelect, roles: [Role],
                      columns: [(name: String, type: UInt32)]) async -> ResultSource? {
        guard roles.count == 1, !incremental.grouped else { return nil }
        let values = request.argumentValues ?? []
        let tokens = parsed.whereText.map { PostgresToken.statementTokens($0) } ?? []
        guard let tokens else { return nil }
        let facts: TableFacts
        do {
            facts = try await roles[0].table.statementFacts(session)
        } catch {
            return nil   // The plan stands without a source: clients show no derived pending rows.
        }
        let names: Set<String> = [roles[0].table.name, roles[0].qualifier]
        let bound = StatementAnalysis.filter(tokens, table: facts, names: names) { name in
            guard name.hasPrefix("$"), let number = Int(name.dropFirst()), values.indices.contains(number - 1) else { return nil }
            return values[number - 1]
        }
        guard case let .success(filter) = bound else { return nil }
        let origins = columns.map { column in
            resolve(PostgresParsedSelect.ColumnReference(qualifier: nil, name: column.name), parsed, roles, columns).map(\.column.name)
        }
        return ResultSource(table: facts.name, identity: incremental.identity.name, columns: origins, filter: filter)
    }
}
