import ListDiff
import LiveListWire

/// A row of a remote list as a presenter sees it — the ``ListDiff/ListRow`` a local list's rows
/// are, with a ``RemoteRowID``: its identity — the server's, or, while its window has not
/// arrived, a stand-in for its position — a content version kept by the client (it changes when
/// the server reloads the row; a pending row's has its top bit set), and whether it shows the
/// app's pending change.
///
/// A cell is given the row at its current version with its content
/// (`CellContent.record(row, record)`), so it reads ``isPending`` from there, with no second
/// lookup:
///
/// ```swift
/// import ListPresenter
/// import LiveListClient
///
/// struct RowDocMessage: Decodable {
///     var subject: String
/// }
///
/// /// A cell's text and whether to dim it, from what the cell is given.
/// func rowDocCell(_ content: CellContent<RemoteSection, RemoteRow, RowDocMessage>) -> (text: String, dimmed: Bool) {
///     switch content {
///     case let .record(row, message): (message.subject, row.isPending)
///     case let .placeholder(row, state): (state.isFailed ? "Tap to retry" : "…", row.isPending)
///     case let .state(block): (block.message ?? "", false)
///     }
/// }
/// ```
public typealias RemoteRow = ListRow<RemoteRowID>

extension RemoteRow {
    /// Whether the row shows the app's pending change (``PendingChange``) — added or changed by
    /// a mutation the server has not answered yet — rather than the server's values: a cell may
    /// dim it. A row is this at its version, for good: the row a list shows after the commit (or
    /// after a refusal takes the change back) has another version, and its cell is reloaded with
    /// it; a row taken from an older state still says what that state showed.
    ///
    /// - Complexity: O(1): it is read from the version.
    public var isPending: Bool { version & Self.pendingVersions != 0 }

    /// The bit set in the version of every row that shows a pending change, and in no version of
    /// a server's row.
    public static var pendingVersions: UInt64 { 1 << 63 }
}

/// A remote row's identity.
///
/// ``value`` reads the server's identity, and ``WireValue``'s typed reads its type:
/// `row.id.value?.integer`, `row.id.value?.uuid` (a `UUID` as 16 bytes or text), `row.id.value?.text`.
/// To find a row by an identity of your own, write it as the server sends it:
/// `.row(.integer(42))`, or `.row(.uuid(id, as: .bytes))` for a `UUID` that GRDB stores in SQLite
/// (`.lowercaseText` for a PostgreSQL `uuid`).
public enum RemoteRowID: Hashable, Sendable, CustomStringConvertible {
    /// The server's identity of the row.
    case row(WireValue)
    /// The row at this flat position, not yet sent (outside the windows the client asked for).
    case unloaded(position: Int)

    /// The server's identity of the row, `nil` for a row not sent yet.
    public var value: WireValue? {
        guard case let .row(value) = self else { return nil }
        return value
    }

    public var description: String {
        switch self {
        case let .row(id): "\(id)"
        case let .unloaded(position): "unloaded#\(position)"
        }
    }
}

/// A section of a remote list — the ``ListDiff/ListSection`` a local list's sections are, keyed
/// by a ``WireValue``: the section column's value (`null` for a list without sections).
public typealias RemoteSection = ListSection<WireValue>

/// What a loaded remote row's cell shows: the query's columns and their values, exactly as the
/// database returned them at the list's version — or, for a row the app's pending change adds or
/// changes, the values it expects (``isPending``, as the row's own ``RemoteRow/isPending`` says).
public struct RemoteRecord: Hashable, Sendable {
    /// The row's identity.
    public var id: WireValue
    /// The query's column names.
    public var columns: [String]
    /// The values, in `columns` order.
    public var values: [WireValue]
    /// Whether the values are the app's pending change (``PendingChange``), not yet the
    /// server's: a cell may show the row dimmed. A row a pending update changed stays pending
    /// while the update is shown, even when a later pending update brings its values back to
    /// the server's: neither is confirmed yet.
    public var isPending: Bool

    /// Creates a record.
    public init(id: WireValue, columns: [String], values: [WireValue], isPending: Bool = false) {
        self.id = id
        self.columns = columns
        self.values = values
        self.isPending = isPending
    }

    /// The value of the column named `name` (the first, when several have the name).
    public subscript(name: String) -> WireValue? {
        guard let index = columns.firstIndex(of: name), index < values.count else { return nil }
        return values[index]
    }
}
