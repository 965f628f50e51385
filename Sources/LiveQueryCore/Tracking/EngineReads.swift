/// The seam between the engine-independent core of a live query (``LiveTracker``) and a database
/// engine: what the core asks of an engine when it carries out a ``TrackingState`` action. Rows
/// come back as ``IndexEntry`` values — the engine's row key, the sort key (which the layout's
/// ``RowOrdering`` compares as the engine does) and a content token — so that the index, the
/// classification of touched rows, the changesets and their delivery never look at the engine.
///
/// SQLite's conformance is ``SQLiteReads``; its runner, `SQLiteQueryRunner`, captures changes
/// (update hook, TEMP triggers, change log) and feeds the tracker's state. A second engine adds an
/// ordering, a conformance and its own runner — files, not branches in the core
/// (docs/ARCHITECTURE.md, "The engine seam").
package protocol EngineReads {
    /// The rows among `keys` that are in the result now, read with the query's own filter (a row
    /// that left the result, or is gone, is absent).
    /// - Complexity: O(k) lookups for k keys.
    func reread(_ keys: [Int64]) throws(LiveQueryError) -> [IndexEntry]

    /// Every row of the result, in its order, into `builder`; `mayBeLarge` lets the engine pick
    /// a plan that suits reading a large share of a table.
    /// - Complexity: O(n) for n rows in the result.
    func fetchAll(into builder: inout IndexBuilder, mayBeLarge: Bool) throws(LiveQueryError)
}
