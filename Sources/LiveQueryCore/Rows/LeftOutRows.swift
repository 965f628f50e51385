/// The rows of a live query's SQL result that its list leaves out, and why: a list shows each
/// identity once, so a row whose identity does not decode as the request's identity type, or
/// repeats the identity of a row already shown, cannot be one of its items.
///
/// Every ``LiveResult`` carries the rows it left out (``LiveResult/leftOut``), so any consumer —
/// one that subscribed late too — sees them at any time; they are never delivered as one failure
/// per row. The list always equals the SQL result minus exactly these rows. A left-out row is
/// remembered: when the row that holds its identity leaves the result (or takes another identity),
/// the left-out row enters the list in that same changeset, as SQLite would now return it.
///
/// - Complexity: O(1) to read; the examples are a few of the rows, not all of them.
public struct LeftOutRows: Sendable, Hashable, CustomStringConvertible {
    /// One kind of problem: how many rows have it, and a few of their identity values as stored.
    public struct Problem: Sendable, Hashable {
        /// How many rows are left out for this reason.
        public var count: Int
        /// The identity values of up to ``LeftOutRows/exampleLimit`` of them, as stored.
        public var examples: [SQLValue]

        /// No row.
        public static let none = Problem(count: 0, examples: [])

        /// "N rows <reason> (examples, …)", or `nil` without rows.
        func describe(_ reason: String) -> String? {
            guard count > 0 else { return nil }
            let more = count > examples.count ? ", …" : ""
            return "\(count) row\(count == 1 ? "" : "s") \(reason) (" + examples.map(\.description).joined(separator: ", ") + more + ")"
        }
    }

    /// How many examples each problem keeps.
    public static let exampleLimit = 3

    /// Rows whose identity value another row of the result already holds (the first one in the
    /// result's order when it was fetched, or the one that was there first, is shown).
    public var duplicateIdentities: Problem
    /// Rows whose identity value cannot be decoded as the request's identity type (a NULL, or a
    /// malformed value).
    public var invalidIdentities: Problem
    /// The name of the identity type the values were decoded as.
    public var identityType: String

    /// No row left out.
    public static func none(identityType: String) -> LeftOutRows {
        LeftOutRows(duplicateIdentities: .none, invalidIdentities: .none, identityType: identityType)
    }

    /// How many rows are left out.
    public var count: Int { duplicateIdentities.count + invalidIdentities.count }

    /// Whether the list shows every row of the SQL result.
    public var isEmpty: Bool { count == 0 }

    public var description: String {
        let parts = [duplicateIdentities.describe("whose identity another row holds"),
                     invalidIdentities.describe("whose identity is not a valid \(identityType)")].compactMap { $0 }
        return parts.isEmpty ? "no row left out" : "left out: " + parts.joined(separator: "; ")
    }
}
