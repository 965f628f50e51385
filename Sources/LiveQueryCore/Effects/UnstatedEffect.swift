/// Why an engine states no effect for a mutation's statement, or no source for a query: the
/// server's start-up report prints it, and clients show no derived pending row for it.
public enum UnstatedEffect: Error, Hashable, Sendable, CustomStringConvertible {
    /// The mutation is code, not statements.
    case notStatements
    /// The engine does not state effects.
    case engineStatesNone
    /// The engine could not read the tables' schema (the error's description).
    case schemaUnreadable(String)
    /// The statement is not one of the forms stated: a single-row INSERT … VALUES, an UPDATE …
    /// SET … WHERE, a DELETE … WHERE, the WHERE made of comparisons joined by AND.
    case form(statement: Int, detail: String)
    /// The statement names a table the database does not have.
    case unknownTable(statement: Int, table: String)
    /// A trigger on the table may change what the statement does.
    case trigger(statement: Int, table: String, trigger: String)
    /// A condition of the WHERE is not a comparison of a column with a value or parameter, or its
    /// result would depend on a conversion the database makes.
    case condition(statement: Int, detail: String)
    /// A query's filter is not made of comparisons of its table's columns with values, joined by
    /// AND, or a comparison's result would depend on a conversion the database makes.
    case filter(detail: String)
    /// A parameter the statement names is not one of the mutation's.
    case unknownParameter(statement: Int, name: String)

    public var description: String {
        switch self {
        case .notStatements: "the mutation is code, not statements"
        case .engineStatesNone: "the engine states no effects"
        case let .schemaUnreadable(error): "the schema could not be read: \(error)"
        case let .form(statement, detail): "statement \(statement + 1): \(detail)"
        case let .unknownTable(statement, table): "statement \(statement + 1): no table \(table)"
        case let .trigger(statement, table, trigger): "statement \(statement + 1): trigger \(trigger) on \(table) may change what it does"
        case let .condition(statement, detail): "statement \(statement + 1): \(detail)"
        case let .filter(detail): "the filter: \(detail)"
        case let .unknownParameter(statement, name): "statement \(statement + 1): no parameter :\(name)"
        }
    }
}
