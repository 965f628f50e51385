/// The sort-column values of one row, in term order. One term, the common case, needs no array.
public enum SortKey: Hashable, Sendable {
    case single(SQLValue)
    case multiple([SQLValue])

    init(_ values: [SQLValue]) {
        self = values.count == 1 ? .single(values[0]) : .multiple(values)
    }

    @inline(__always)
    func value(at term: Int) -> SQLValue {
        switch self {
        case let .single(value): value
        case let .multiple(values): values[term]
        }
    }

    var first: SQLValue {
        switch self {
        case let .single(value): value
        case let .multiple(values): values.first ?? .null
        }
    }
}

/// A row's place in the result — its sort key, with the rowid breaking ties — and its content
/// version, kept in the entry so that a published index describes its result completely.
/// Equality is identity and key; the version does not take part.
struct IndexEntry: Sendable, Equatable {
    var key: SortKey
    var rowid: Int64
    var version: SQLValue

    static func == (lhs: IndexEntry, rhs: IndexEntry) -> Bool {
        lhs.rowid == rhs.rowid && lhs.key == rhs.key
    }
}
