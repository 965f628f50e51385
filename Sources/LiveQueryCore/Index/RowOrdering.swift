/// How an engine orders a result's rows: the engine's half of the index, and part of the engine
/// seam (docs/ARCHITECTURE.md). The index, its classification of touched rows and the refetch
/// diff never compare values themselves; they ask the layout's ordering, which the engine's
/// planner built to reproduce the engine's own `ORDER BY` exactly (SQLite: ``SortKeyComparator``).
package protocol RowOrdering: Sendable {
    /// Negative, zero or positive as `lhs` sorts before, with, or after `rhs`: the sort key, then
    /// the row key, so that two different rows never tie.
    func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int
}

/// How an engine groups a result's rows into sections by their first sort value: which values
/// share a section, and in which order sections come (SQLite: ``SortKeyComparator/Rule``).
package protocol SectionOrdering: Sendable {
    /// The value that stands for every value equal to `value` under the section term's
    /// collation, so that rows whose section value compares equal share one section.
    func sectionKey(of value: SQLValue) -> SQLValue

    /// Negative, zero or positive as the section keyed `lhs` comes before, with, or after the
    /// section keyed `rhs`.
    func compare(_ lhs: SQLValue, _ rhs: SQLValue) -> Int
}
