import LiveListWire

/// What the app expects one of its mutations to do to a list it shows: the list shows it at once,
/// marked pending (``RemoteRow/isPending``), until the server's answer — whose commit then
/// shows in its place, as the same row.
///
/// An effect applies to the rows the client holds (its window). It does nothing when the list
/// shows it already: an insert of an identity the list holds, an update or a delete of one it
/// does not hold, an update whose columns already have those values. An effect whose place the
/// client cannot find exactly among the rows it holds is not shown (see ``PendingPlacement``).
public enum PendingChange: Hashable, Sendable {
    /// A new row with identity `id` and the values of `values` (by column name; columns not
    /// given read as NULL), placed by `placement`.
    case insert(id: WireValue, values: [String: WireValue], placement: PendingPlacement = .sorted)
    /// The held row `id` with the columns of `values` changed. With the list's order stated
    /// (``RemoteListModel/order``), the row moves where its new values sort among the rows held;
    /// when that place is not among them, it stays where it is.
    case update(id: WireValue, values: [String: WireValue])
    /// The held row `id` taken out.
    case delete(id: WireValue)

    /// The identity the change is about.
    public var id: WireValue {
        switch self {
        case let .insert(id, _, _), let .update(id, _), let .delete(id): id
        }
    }
}

/// Where a pending insert stands.
public enum PendingPlacement: Hashable, Sendable {
    /// Where the server's stated order puts it among the rows held (``RemoteListModel/order``):
    /// not shown when the list states no order, when its place is before the first row held and
    /// the window does not start the list, after the last held and the window does not end it,
    /// or in a section the list does not have (with sections, the first order term's column is
    /// the row's section).
    case sorted
    /// The first row of the section whose key is `section` (`.null` for a list without
    /// sections), when that section's start is among the rows held.
    case first(inSection: WireValue)
    /// The last row of the section whose key is `section`, when that section's end is among the
    /// rows held.
    case last(inSection: WireValue)
}

/// Names pending changes shown by ``RemoteLiveQuery/showPending(_:)``, to take them back with
/// ``RemoteLiveQuery/withdrawPending(_:)``.
public struct PendingChangesID: Hashable, Sendable {
    let value: Int
}
