import GRDB
import LiveQueryCore

/// What SQLite mutations' statements do, stated for clients (``LiveQueryCore/StatementEffect``):
/// the server reads it once per published mutation.
package enum SQLiteMutationEffects {
    /// The effects of `statements` (SQL with `:name` parameters, run in order in one
    /// transaction), `parameters` giving the classes of values each parameter may take; read
    /// in `db` (the tables' columns, defaults, collations and triggers).
    /// - Complexity: O(s · (t + c)) for s statements of t tokens over tables of c columns.
    package static func effects(of statements: [String], parameters: [String: Set<SQLStorageClass>], in db: Database) throws -> MutationEffects {
        var tokenized: [[StatementToken]] = []
        for (number, sql) in statements.enumerated() {
            guard let tokens = SQLTokenizer.tokens(sql) else { return .unstated(.form(statement: number, detail: "a literal or a quoted name is not closed")) }
            tokenized.append(tokens.map(\.statementToken))
        }
        var facts: [String: TableFacts] = [:]
        for tokens in tokenized {
            guard let table = StatementAnalysis.table(of: tokens), facts[table.lowercased()] == nil else { continue }
            if let read = try TableFacts.read(table, db) { facts[table.lowercased()] = read }
        }
        return StatementAnalysis.effects(of: tokenized, parameters: parameters) { facts[$0.lowercased()] }
    }
}
