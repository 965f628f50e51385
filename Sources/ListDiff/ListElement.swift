/// An element of a list snapshot — an item or a section — with a stable identity and a notion of
/// "same content".
///
/// The identity (`id`, from `Identifiable`) decides whether an element in the new snapshot is the
/// same row as one in the old snapshot; `isContentEqual(to:)` decides whether that row must be
/// redrawn. Elements that are `Equatable` get `==` as their content equality; a row backed by a
/// database usually compares a version column or a content digest instead (see ``VersionedItem``).
///
/// ```swift
/// import ListDiff
///
/// struct Message: ListElement {
///     var id: Int64
///     var version: Int
///     func isContentEqual(to other: Message) -> Bool { version == other.version }
/// }
/// ```
public protocol ListElement: Identifiable {
    /// Whether `self` shows the same content as `other`, an element with the same identity.
    func isContentEqual(to other: Self) -> Bool
}

extension ListElement where Self: Equatable {
    /// Equatable elements compare their whole value.
    @inlinable
    public func isContentEqual(to other: Self) -> Bool { self == other }
}
