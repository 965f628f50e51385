/// The values a row is ordered by, in term order — its sort values, then its identity when the
/// identity is not the rowid. One value, the common case, needs no array.
package enum SortKey: Hashable, Sendable {
    case single(SQLValue)
    case multiple([SQLValue])

    package init(_ values: [SQLValue]) {
        self = values.count == 1 ? .single(values[0]) : .multiple(values)
    }

    @inline(__always)
    package func value(at term: Int) -> SQLValue {
        switch self {
        case let .single(value): value
        case let .multiple(values): values[term]
        }
    }

    package var count: Int {
        switch self {
        case .single: 1
        case let .multiple(values): values.count
        }
    }

    package var first: SQLValue {
        switch self {
        case let .single(value): value
        case let .multiple(values): values.first ?? .null
        }
    }

    package var last: SQLValue {
        switch self {
        case let .single(value): value
        case let .multiple(values): values.last ?? .null
        }
    }
}

/// A row as the result index holds it: where it sorts, which row it is, and a 64-bit token of its
/// content. `rowid` is the base table's rowid on the incremental path (and breaks ties), or the
/// row's ordinal in the fetch that produced it on the refetch path.
package struct IndexEntry: Sendable, TreeElement {
    package var key: SortKey
    package var rowid: Int64
    /// Changes whenever the row's content does: a digest of the version column (or of every
    /// column when there is none) and of the sort values, so 'abc' → 'ABC' under NOCASE reloads.
    package var token: UInt64

    @inline(__always) var weight: Int { 1 }

    package init(key: SortKey, rowid: Int64, token: UInt64) {
        self.key = key
        self.rowid = rowid
        self.token = token
    }
}

/// A section as the section index holds it: its key (normalized under the section term's
/// collation) and how many rows it holds.
struct SectionEntry: Sendable, TreeElement {
    var key: SQLValue
    var count: Int

    @inline(__always) var weight: Int { count }
}
