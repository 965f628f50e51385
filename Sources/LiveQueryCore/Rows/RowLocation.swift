import ListDiff

/// Where a row is in a ``LiveResult``: an answer that tells "not in the result" apart from "not
/// indexed yet" while a large query still indexes the rest of its first fetch.
public enum RowLocation: Sendable, Hashable {
    /// The row is at this path.
    case at(ItemPath)
    /// The result is complete and does not hold the row.
    case notInResult
    /// The result is only the first rows of the query (``LiveResult/isComplete`` is `false`):
    /// the row may be further down. Ask again after the update that completes it.
    case notYetKnown
}
