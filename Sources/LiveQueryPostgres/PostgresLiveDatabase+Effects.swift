import LiveQueryCore

extension PostgresLiveDatabase {
    /// What a mutation's `statements` (SQL with `:name` placeholders, run in order in one
    /// transaction) do, stated for clients (``LiveQueryCore/MutationEffects``), `parameters`
    /// giving the classes of values each parameter may take: read from the catalog (the tables'
    /// column types, defaults, collations and triggers) on the connection that reads rows.
    /// - Complexity: one catalog read per table the statements change.
    package func mutationEffects(of statements: [String], parameters: [String: Set<SQLStorageClass>]) async -> MutationEffects {
        var tokenized: [[StatementToken]] = []
        for (number, sql) in statements.enumerated() {
            guard let tokens = PostgresToken.statementTokens(sql) else {
                return .unstated(.form(statement: number, detail: "PostgreSQL's lexer refuses it"))
            }
            tokenized.append(tokens)
        }
        var facts: [String: TableFacts] = [:]
        do {
            let session = try await engine.contents.open()
            for tokens in tokenized {
                guard let name = StatementAnalysis.table(of: tokens), facts[name] == nil else { continue }
                if let table = try await PostgresCatalog.table(named: PostgresPlan.quoted(name), session) {
                    facts[name] = try await table.statementFacts(session)
                }
            }
        } catch {
            return .unstated(.schemaUnreadable("\(error)"))
        }
        return StatementAnalysis.effects(of: tokenized, parameters: parameters) { facts[$0] }
    }
}
