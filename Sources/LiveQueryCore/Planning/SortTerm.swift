/// One ORDER BY term of a live query: a column, a direction, where NULLs go, and a collation.
///
/// ```swift
/// import LiveQuery
///
/// let terms = [SortTerm("lastActivity", .descending), SortTerm("name", collation: .nocase, nulls: .last)]
/// ```
public struct SortTerm: Hashable, Sendable, CustomStringConvertible {
    /// ASC or DESC.
    public enum Direction: Hashable, Sendable { case ascending, descending }
    /// NULLS FIRST or NULLS LAST.
    public enum NullsOrder: Hashable, Sendable { case first, last }

    /// Text comparison, as SQLite does it.
    public enum Collation: Hashable, Sendable {
        /// Bytes of the UTF-8 text (SQLite's default).
        case binary
        /// ASCII letters folded to lower case, nothing else folded.
        case nocase
        /// Trailing spaces ignored.
        case rtrim
        /// An application-defined collation: LiveList cannot reproduce it, so the query runs on
        /// the refetch-and-diff path.
        case custom(String)

        package var sqlName: String {
            switch self {
            case .binary: "BINARY"
            case .nocase: "NOCASE"
            case .rtrim: "RTRIM"
            case let .custom(name): name
            }
        }
    }

    /// The column to sort by.
    public var column: String
    /// ASC or DESC.
    public var direction: Direction
    /// `nil`: SQLite's default (first when ascending, last when descending).
    public var nulls: NullsOrder?
    /// `nil`: the column's declared collation, else BINARY.
    public var collation: Collation?

    /// Creates a term.
    public init(_ column: String, _ direction: Direction = .ascending, collation: Collation? = nil, nulls: NullsOrder? = nil) {
        self.column = column
        self.direction = direction
        self.collation = collation
        self.nulls = nulls
    }

    public var description: String { sql(collation: collation) }

    /// The term as SQL, with `collation` spelled out when given.
    package func sql(collation: Collation?) -> String {
        var text = column.quotedIdentifier
        if let collation { text += " COLLATE \(collation.sqlName)" }
        text += direction == .ascending ? " ASC" : " DESC"
        if let nulls { text += nulls == .first ? " NULLS FIRST" : " NULLS LAST" }
        return text
    }
}

extension String {
    /// The string as an SQL identifier in double quotes.
    package var quotedIdentifier: String { "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}
