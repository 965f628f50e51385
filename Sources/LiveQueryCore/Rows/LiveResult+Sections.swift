import Foundation
import ListDiff

extension LiveResult {
    /// The section's name, like `NSFetchedResultsSectionInfo.name`: the section key as text
    /// (an integer or real in decimal, a BLOB in hexadecimal, NULL as the empty string).
    ///
    /// - Complexity: O(log s) for s sections.
    public func sectionName(at index: Int) -> String {
        switch sectionInfo(at: index).key {
        case .null: ""
        case let .integer(value): String(value)
        case let .real(value): String(value)
        case let .text(text): text.string
        case let .blob(bytes): SQLValue.hex(bytes)
        }
    }

    /// The title of the section index entry for `name`: its first character, upper-cased, as
    /// NSFetchedResultsController's default `sectionIndexTitle(forSectionName:)`.
    public static func sectionIndexTitle(forSectionName name: String) -> String {
        name.first.map { String($0).uppercased() } ?? ""
    }

    /// The section index titles (`sectionIndexTitles` of NSFetchedResultsController): each
    /// section's title, in section order, without repeats.
    ///
    /// - Complexity: O(s log s) for s sections — call it when the sections change, not per cell.
    public var sectionIndexTitles: [String] {
        var titles: [String] = []
        var seen = Set<String>()
        for index in 0..<sectionCount where sectionInfo(at: index).count > 0 {
            let title = Self.sectionIndexTitle(forSectionName: sectionName(at: index))
            if seen.insert(title).inserted { titles.append(title) }
        }
        return titles
    }

    /// The first section whose index title is `title` (NSFetchedResultsController's
    /// `section(forSectionIndexTitle:at:)`), or `nil`.
    ///
    /// - Complexity: O(s log s).
    public func section(forSectionIndexTitle title: String) -> Int? {
        (0..<sectionCount).first { Self.sectionIndexTitle(forSectionName: sectionName(at: $0)) == title }
    }

    /// The index path of the row identified by `id` (NSFetchedResultsController's
    /// `indexPath(forObject:)`), or `nil` when it is not in the result.
    ///
    /// - Complexity: O(log n) on the newest result.
    public func indexPath(of id: ID) -> ItemPath? { path(ofItem: id) }
}
