/// The position of an item in a sectioned list: a section index and an item index within it.
///
/// LiveList uses its own two-field value instead of Foundation's `IndexPath` so that `ListDiff`
/// depends on nothing and index paths cost no allocation. The UIKit layer converts.
public struct ItemPath: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The index of the section.
    public var section: Int
    /// The index of the item within its section.
    public var item: Int

    /// Creates the path of the item at `item` in section `section`.
    @inlinable
    public init(section: Int, item: Int) {
        self.section = section
        self.item = item
    }

    @inlinable
    public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
        lhs.section != rhs.section ? lhs.section < rhs.section : lhs.item < rhs.item
    }

    public var description: String { "[\(section), \(item)]" }
}
