/// What one absorbed commit did to a query: its end, the rows it touched, the joined rows it
/// changed (their keys as text, per joined role), resolved to rows when the round applies it.
struct AbsorbedCommit: Sendable {
    var end: UInt64
    var rows: Set<Int64> = []
    var lookups: [Int: Set<String>] = [:]
    /// Its lookups were resolved into ``rows`` already (before a batch was taken): it touched a
    /// joined table all the same.
    var joinsResolved = false

    var touchesJoinedTable: Bool { joinsResolved || !lookups.isEmpty }
}
