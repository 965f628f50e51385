/// One condition on a row of a table, as a query's filter or a statement's WHERE states it
/// exactly: a column compared with an operand, or a column tested for NULL. A comparison with NULL
/// on either side is not met; otherwise the values compare as a stated order compares them
/// (by storage class — numbers, then text, then bytes — then by value, text under `collation`).
public struct RowCondition: Hashable, Sendable {
    /// How the column is tested.
    public enum Test: String, Hashable, Sendable, CaseIterable {
        /// `=`, `<>`, `<`, `<=`, `>`, `>=`: the column compared with the operand.
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        /// `IS NULL`, `IS NOT NULL`: no operand.
        case isNull, notNull

        /// The test with its sides swapped: `5 < x` is `x > 5`.
        public var swapped: Test {
            switch self {
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            case .equal, .notEqual, .isNull, .notNull: self
            }
        }
    }

    /// The table column tested.
    public var column: String
    /// The test.
    public var test: Test
    /// What the column is compared with (`nil` for `isNull` and `notNull`).
    public var operand: RowOperand?
    /// How text compares.
    public var collation: SortTerm.Collation

    /// A condition.
    public init(column: String, test: Test, operand: RowOperand? = nil, collation: SortTerm.Collation = .binary) {
        self.column = column
        self.test = test
        self.operand = operand
        self.collation = collation
    }
}

/// A value a statement or a filter uses: known, or a mutation's argument.
public enum RowOperand: Hashable, Sendable {
    /// A value stated exactly.
    case value(SQLValue)
    /// The argument of the mutation's parameter of that name.
    case parameter(String)
}
