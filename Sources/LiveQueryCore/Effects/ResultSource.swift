/// What a live query's rows are, stated exactly when its engine can: rows of one table, each
/// identified by one of its columns, each result column a column of the table as stored (or an
/// expression), and a filter that a row of the table meets exactly when it is in the result.
/// A client that knows this and a mutation's ``StatementEffect`` knows what the mutation will do
/// to the list before the commit shows it.
public struct ResultSource: Hashable, Sendable {
    /// The table the rows are rows of, as the database names it.
    public var table: String
    /// The table's column that is the rows' identity.
    public var identity: String
    /// The table column behind each result column (`nil`: an expression).
    public var columns: [String?]
    /// Conditions, all met by a row of the table exactly when it is in the result (the query's
    /// parameters bound: every operand is a ``RowOperand/value(_:)``).
    public var filter: [RowCondition]

    /// A source.
    public init(table: String, identity: String, columns: [String?], filter: [RowCondition]) {
        self.table = table
        self.identity = identity
        self.columns = columns
        self.filter = filter
    }
}
