/// A list element made of an identity and a version: the shape of a database row as the list sees
/// it (rowid or primary key, plus a version column or content digest).
///
/// Two versioned items with the same `id` are the same row; the row needs a reload when the
/// versions differ.
///
/// ```swift
/// import ListDiff
///
/// let row = VersionedItem(id: 42 as Int64, version: 7)
/// ```
public struct VersionedItem<ID: Hashable & Sendable, Version: Hashable & Sendable>: ListElement, Hashable, Sendable {
    /// The identity of the row.
    public var id: ID
    /// The content version; a change means the row must be redrawn.
    public var version: Version

    /// Creates an element with identity `id` at `version`.
    @inlinable
    public init(id: ID, version: Version) {
        self.id = id
        self.version = version
    }
}

extension VersionedItem where Version == Int {
    /// Creates an element whose content never changes (version 0): identity-only lists.
    @inlinable
    public init(id: ID) {
        self.init(id: id, version: 0)
    }
}
