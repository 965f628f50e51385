/// How the server orders a list, stated exactly (a `reset`'s `order`): a client compares a row it
/// has not received — one its own mutation adds or changes — with the rows it holds, and finds
/// where the server will put it.
///
/// Rows compare term after term by the values of each term's column (``WireOrderTerm/column``;
/// `nil`, the row's identity). The last term is always the identity, so no two rows of a list
/// compare equal.
///
/// ```swift
/// import LiveListWire
///
/// func firstOf(_ rows: [(id: WireValue, values: [WireValue])], _ order: WireOrder) -> WireValue? {
///     rows.min { order.compare($0, $1) < 0 }?.id
/// }
/// ```
public struct WireOrder: Hashable, Sendable {
    /// The terms, the identity last.
    public var terms: [WireOrderTerm]

    /// An order of `terms`.
    public init(terms: [WireOrderTerm]) {
        self.terms = terms
    }

    /// Negative when row `a` comes before row `b`, positive when after, 0 when every term ties
    /// (the same identity). A column missing from a row's values reads as NULL.
    /// - Complexity: O(t · v) for t terms and values of v bytes.
    public func compare(_ a: (id: WireValue, values: [WireValue]), _ b: (id: WireValue, values: [WireValue])) -> Int {
        for term in terms {
            let result = term.compare(term.value(of: a), term.value(of: b))
            if result != 0 { return result }
        }
        return 0
    }

    var json: JSONValue { .array(terms.map(\.json)) }

    /// `columns`: how many the list has (`nil` when the message does not say: a `changes`).
    init(json: JSONValue, columns: Int?) throws(WireDecodingError) {
        guard case let .array(terms) = json, !terms.isEmpty else { throw .invalidField("order", "expected a non-empty array of terms") }
        self.terms = []
        for term in terms { self.terms.append(try WireOrderTerm(json: term, columns: columns)) }
        guard self.terms.last?.column == nil else { throw .invalidField("order", "the last term must be the identity (column null)") }
    }
}

/// One term of a ``WireOrder``: a column, a direction, where NULLs go, how text compares.
public struct WireOrderTerm: Hashable, Sendable {
    /// How text compares: by the bytes of its UTF-8 after this rule.
    public enum Collation: String, Hashable, Sendable, CaseIterable {
        /// The text as it is.
        case binary
        /// ASCII letters A–Z read as a–z; nothing else folded. The bytes compare up to the first
        /// NUL of the left text, then the shorter text comes first (SQLite's rule).
        case nocase
        /// Trailing spaces (U+0020) dropped.
        case rtrim
    }

    /// An index into the reset's `columns`; `nil`: the row's identity.
    public var column: Int?
    /// Whether larger values come first (NULLs keep their place: ``nullsFirst``).
    public var descending: Bool
    /// Whether NULLs come before every other value, whatever ``descending`` says.
    public var nullsFirst: Bool
    /// How text compares.
    public var collation: Collation

    /// A term.
    public init(column: Int?, descending: Bool = false, nullsFirst: Bool, collation: Collation = .binary) {
        self.column = column
        self.descending = descending
        self.nullsFirst = nullsFirst
        self.collation = collation
    }

    func value(of row: (id: WireValue, values: [WireValue])) -> WireValue {
        guard let column else { return row.id }
        return row.values.indices.contains(column) ? row.values[column] : .null
    }

    /// Negative when `a` comes before `b` under this term, positive when after, 0 when they tie:
    /// NULLs by ``nullsFirst``; then numbers before text before bytes; numbers by value (an
    /// integer and a real exactly), text by UTF-8 bytes after the collation, bytes by bytes;
    /// then ``descending`` reverses. A NaN compares as NULL.
    /// - Complexity: O(v) for values of v bytes.
    public func compare(_ a: WireValue, _ b: WireValue) -> Int {
        // A NaN (no database value is one; an app's own might be) compares as NULL, as SQLite stores it.
        let (a, b) = (Self.nanAsNull(a), Self.nanAsNull(b))
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return nullsFirst ? -1 : 1
        case (_, .null): return nullsFirst ? 1 : -1
        default:
            let ascending = Self.compareNonNull(a, b, collation)
            return descending ? -ascending : ascending
        }
    }

    private static func nanAsNull(_ value: WireValue) -> WireValue {
        if case let .real(number) = value, number.isNaN { return .null }
        return value
    }

    private static func rank(_ value: WireValue) -> Int {
        switch value {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    private static func compareNonNull(_ a: WireValue, _ b: WireValue, _ collation: Collation) -> Int {
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x < y ? -1 : (x == y ? 0 : 1)
        case let (.real(x), .real(y)): return x < y ? -1 : (x == y ? 0 : 1)
        case let (.integer(x), .real(y)): return -compare(real: y, integer: x)
        case let (.real(x), .integer(y)): return compare(real: x, integer: y)
        case let (.text(x), .text(y)):
            let (a, b) = (folded(x, collation), folded(y, collation))
            guard collation == .nocase else { return compareBytes(a, b) }
            // NOCASE compares up to the left text's first NUL, then by length, as SQLite does.
            for (p, q) in zip(a, b) {
                if p == 0 {
                    if q != 0 { return -1 }
                    break
                }
                if p != q { return p < q ? -1 : 1 }
            }
            return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
        case let (.blob(x), .blob(y)): return compareBytes(x, y)
        default: return rank(a) - rank(b)
        }
    }

    /// A double against a 64-bit integer without rounding either (`9007199254740993` is more
    /// than `9007199254740992.0`).
    private static func compare(real: Double, integer: Int64) -> Int {
        if real < -9_223_372_036_854_775_808.0 { return -1 }
        if real >= 9_223_372_036_854_775_808.0 { return 1 }
        let truncated = real.rounded(.towardZero)
        let whole = Int64(truncated)
        if whole != integer { return whole < integer ? -1 : 1 }
        let fraction = real - truncated
        return fraction < 0 ? -1 : (fraction > 0 ? 1 : 0)
    }

    private static func folded(_ text: String, _ collation: Collation) -> [UInt8] {
        var bytes = Array(text.utf8)
        switch collation {
        case .binary: break
        case .nocase:
            for index in bytes.indices where bytes[index] >= 0x41 && bytes[index] <= 0x5A { bytes[index] |= 0x20 }
        case .rtrim:
            while bytes.last == 0x20 { bytes.removeLast() }
        }
        return bytes
    }

    private static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    }

    var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "column", value: column.map { .integer(Int64($0)) } ?? .null),
            .init(key: "descending", value: .bool(descending)),
            .init(key: "nullsFirst", value: .bool(nullsFirst)),
        ]
        if collation != .binary { members.append(.init(key: "collation", value: .string(collation.rawValue))) }
        return .object(members)
    }

    init(json: JSONValue, columns: Int?) throws(WireDecodingError) {
        guard case let .object(members) = json else { throw .invalidField("order", "expected term objects") }
        func member(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
        switch member("column") {
        case .null?: column = nil
        case let .integer(index)? where index >= 0 && index < Int64(columns ?? Int(Int32.max)): column = Int(index)
        default: throw .invalidField("order", "a term's column must be an index into columns, or null")
        }
        guard case let .bool(descending)? = member("descending"), case let .bool(nullsFirst)? = member("nullsFirst") else {
            throw .invalidField("order", "a term needs descending and nullsFirst")
        }
        self.descending = descending
        self.nullsFirst = nullsFirst
        switch member("collation") {
        case nil: collation = .binary
        case let .string(name)?:
            guard let collation = Collation(rawValue: name) else { throw .invalidField("order", "unknown collation \(name.prefix(32))") }
            self.collation = collation
        default: throw .invalidField("order", "a collation is a string")
        }
    }
}
