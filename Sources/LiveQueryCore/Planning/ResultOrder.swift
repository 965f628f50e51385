/// How a live query orders its result, stated on the query's own columns: what a client needs to
/// place a row it has not been sent — one its own write adds or changes — exactly where the query
/// will put it. Rows compare term after term; the last term is the identity, so no two rows tie.
/// A query states it when every sort term is one of its columns, compared as the engine compares
/// it (see each engine's `order`).
public struct ResultOrder: Hashable, Sendable {
    /// One term: a column of the query, or the identity.
    public struct Term: Hashable, Sendable {
        /// The index of the query's column, in the order of its column names; `nil`: the row's
        /// identity.
        public var column: Int?
        /// Whether larger values come first.
        public var descending: Bool
        /// Whether NULLs come before every other value, whatever the direction.
        public var nullsFirst: Bool
        /// How text compares (never a custom collation).
        public var collation: SortTerm.Collation

        /// A term.
        public init(column: Int?, descending: Bool, nullsFirst: Bool, collation: SortTerm.Collation = .binary) {
            self.column = column
            self.descending = descending
            self.nullsFirst = nullsFirst
            self.collation = collation
        }
    }

    /// The terms, the identity last.
    public var terms: [Term]

    /// An order of `terms`.
    public init(terms: [Term]) {
        self.terms = terms
    }
}
