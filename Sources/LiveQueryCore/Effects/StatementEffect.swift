/// What one statement of a mutation does to a table, stated exactly: the row it inserts, or the
/// rows it updates or deletes — those that meet its conditions. A value the engine cannot state
/// (a clock, a sequence, an expression) is `nil`.
public enum StatementEffect: Hashable, Sendable {
    /// One row inserted into `table`: per column, its value (`nil`: not stated). A column not in
    /// `values` is not stated either.
    case insert(table: String, values: [String: RowOperand?])
    /// The rows of `table` that meet every one of `conditions` take the values of `set`.
    case update(table: String, conditions: [RowCondition], set: [String: RowOperand?])
    /// The rows of `table` that meet every one of `conditions` are deleted.
    case delete(table: String, conditions: [RowCondition])

    /// The table the statement changes.
    public var table: String {
        switch self {
        case let .insert(table, _), let .update(table, _, _), let .delete(table, _): table
        }
    }
}

/// What a mutation's statements do, as its engine states them: one effect per statement, in the
/// order they run; or why it cannot state them.
public enum MutationEffects: Hashable, Sendable {
    /// Every statement stated.
    case stated([StatementEffect])
    /// Not stated, for this reason.
    case unstated(UnstatedEffect)
}
