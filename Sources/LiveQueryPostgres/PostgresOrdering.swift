import LiveQueryCore

/// PostgreSQL's `ORDER BY` over a live query's sort terms, then its identity (part of the key
/// when it is not the row key), then the row key — the engine's half of the result index.
struct PostgresOrdering: RowOrdering {
    /// One term: how its values compare and where NULLs go.
    struct Rule: SectionOrdering {
        var comparison: PostgresComparison
        var descending: Bool
        /// PostgreSQL's default: NULLs are larger than any value, so last ascending, first descending.
        var nullsFirst: Bool

        func sectionKey(of value: SQLValue) -> SQLValue { PostgresOrdering.canonical(value, comparison) }

        func compare(_ lhs: SQLValue, _ rhs: SQLValue) -> Int { PostgresOrdering.compare(lhs, rhs, self) }
    }

    var rules: [Rule]

    func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int {
        for (term, rule) in rules.enumerated() {
            let result = Self.compare(lhs.key.value(at: term), rhs.key.value(at: term), rule)
            if result != 0 { return result }
        }
        return lhs.rowid < rhs.rowid ? -1 : (lhs.rowid == rhs.rowid ? 0 : 1)
    }

    static func compare(_ lhs: SQLValue, _ rhs: SQLValue, _ rule: Rule) -> Int {
        switch (lhs.isNull, rhs.isNull) {
        case (true, true): return 0
        case (true, false): return rule.nullsFirst ? -1 : 1
        case (false, true): return rule.nullsFirst ? 1 : -1
        case (false, false):
            let ascending = compareNonNull(lhs, rhs, rule.comparison)
            return rule.descending ? -ascending : ascending
        }
    }

    static func compareNonNull(_ lhs: SQLValue, _ rhs: SQLValue, _ comparison: PostgresComparison) -> Int {
        switch (lhs, rhs) {
        case let (.integer(a), .integer(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.real(a), .real(b)): return compareFloat(a, b)
        case let (.text(a), .text(b)):
            // By bytes, as SQLite's BINARY: one comparison for both engines.
            return comparison == .numeric ? NumericText.compare(a.bytes, b.bytes) : SortKeyComparator.compareText(a, b, .binary)
        case let (.blob(a), .blob(b)): return SortKeyComparator.compareBytes(a, b)
        default: return 0   // one column holds one type
        }
    }

    /// float4/float8 order: NaN equals NaN and is above every number; -0 equals 0.
    static func compareFloat(_ a: Double, _ b: Double) -> Int {
        switch (a.isNaN, b.isNaN) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): return a < b ? -1 : (a == b ? 0 : 1)
        }
    }

    /// The value that stands for every value equal to it: rows whose section values compare
    /// equal share a section (1.0 and 1.00; -0 and 0; every NaN).
    static func canonical(_ value: SQLValue, _ comparison: PostgresComparison) -> SQLValue {
        switch (value, comparison) {
        case let (.real(number), _):
            if number.isNaN { return .real(.nan) }
            return number == 0 ? .real(0) : value
        case let (.text(text), .numeric): return .text(SQLText(bytes: NumericText.canonical(text.bytes)))
        default: return value
        }
    }
}

/// Rows in the order the server returned them: a result whose order is PostgreSQL's to give
/// (the refetch path), where the row key is the fetch ordinal.
struct FetchOrder: RowOrdering {
    func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int {
        lhs.rowid < rhs.rowid ? -1 : (lhs.rowid == rhs.rowid ? 0 : 1)
    }
}

/// Exact comparison of `numeric`s in their text form (`-12.3400`, `NaN`, `Infinity`), at any
/// scale: the order PostgreSQL's numeric_cmp gives, with NaN above +Infinity.
enum NumericText {
    private static func rank(_ bytes: [UInt8]) -> Int {
        switch bytes {
        case Array("NaN".utf8): 3
        case Array("Infinity".utf8): 2
        case Array("-Infinity".utf8): -2
        default: 0
        }
    }

    /// Sign (-1, 0, 1), integer digits without leading zeros, fraction digits without trailing zeros.
    private static func parts(_ bytes: [UInt8]) -> (sign: Int, integer: ArraySlice<UInt8>, fraction: ArraySlice<UInt8>) {
        var digits = bytes[...]
        var negative = false
        if digits.first == UInt8(ascii: "-") {
            negative = true
            digits = digits.dropFirst()
        }
        let point = digits.firstIndex(of: UInt8(ascii: ".")) ?? digits.endIndex
        var integer = digits[digits.startIndex..<point]
        var fraction = point < digits.endIndex ? digits[(point + 1)...] : digits[digits.endIndex...]
        while integer.first == UInt8(ascii: "0") { integer = integer.dropFirst() }
        while fraction.last == UInt8(ascii: "0") { fraction = fraction.dropLast() }
        let isZero = integer.isEmpty && fraction.isEmpty
        return (isZero ? 0 : (negative ? -1 : 1), integer, fraction)
    }

    static func compare(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        let (a, b) = (rank(lhs), rank(rhs))
        // -Infinity (-2) < every finite value (0) < Infinity (2) < NaN (3).
        if a != b { return a < b ? -1 : 1 }
        if a != 0 { return 0 }
        let x = parts(lhs), y = parts(rhs)
        if x.sign != y.sign { return x.sign < y.sign ? -1 : 1 }
        let magnitude = compareMagnitude(x.integer, x.fraction, y.integer, y.fraction)
        return x.sign < 0 ? -magnitude : magnitude
    }

    private static func compareMagnitude(_ ai: ArraySlice<UInt8>, _ af: ArraySlice<UInt8>, _ bi: ArraySlice<UInt8>, _ bf: ArraySlice<UInt8>) -> Int {
        if ai.count != bi.count { return ai.count < bi.count ? -1 : 1 }
        for (x, y) in zip(ai, bi) where x != y { return x < y ? -1 : 1 }
        for (x, y) in zip(af, bf) where x != y { return x < y ? -1 : 1 }
        return af.count < bf.count ? -1 : (af.count == bf.count ? 0 : 1)
    }

    /// One text for every spelling of a value: no trailing fraction zeros, `0` for zero.
    static func canonical(_ bytes: [UInt8]) -> [UInt8] {
        guard rank(bytes) == 0 else { return bytes }
        let value = parts(bytes)
        guard value.sign != 0 else { return Array("0".utf8) }
        var text: [UInt8] = value.sign < 0 ? [UInt8(ascii: "-")] : []
        text += value.integer.isEmpty ? [UInt8(ascii: "0")] : Array(value.integer)
        if !value.fraction.isEmpty { text += [UInt8(ascii: ".")] + Array(value.fraction) }
        return text
    }
}
