#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Compares rows exactly as SQLite's `ORDER BY <terms>, rowid` does for plain column terms
/// (docs/SQLITE-FACTS.md): storage classes NULL < INTEGER/REAL < TEXT < BLOB; INTEGER and REAL
/// compared numerically without rounding; TEXT by BINARY, NOCASE or RTRIM; BLOB by memcmp then
/// length; DESC and NULLS FIRST/LAST; the rowid last, so no two rows tie.
///
/// SQLite's side of the engine seam's ordering (``RowOrdering``; its rules are the
/// ``SectionOrdering`` of a sectioned result).
package struct SortKeyComparator: RowOrdering {
    /// One term's direction, NULLs placement and collation.
    package struct Rule: SectionOrdering {
        package var descending: Bool
        package var nullsFirst: Bool
        package var collation: SortTerm.Collation

        package init(descending: Bool, nullsFirst: Bool, collation: SortTerm.Collation) {
            self.descending = descending
            self.nullsFirst = nullsFirst
            self.collation = collation
        }

        package func sectionKey(of value: SQLValue) -> SQLValue { SortKeyComparator.sectionKey(value, collation) }

        package func compare(_ lhs: SQLValue, _ rhs: SQLValue) -> Int { SortKeyComparator.compare(lhs, rhs, self) }
    }

    package var rules: [Rule]

    package init(terms: [SortTerm], collations: [SortTerm.Collation]) {
        rules = zip(terms, collations).map { term, collation in
            let descending = term.direction == .descending
            let nullsFirst = term.nulls.map { $0 == .first } ?? !descending
            return Rule(descending: descending, nullsFirst: nullsFirst, collation: collation)
        }
    }

    /// Negative, zero or positive as `lhs` sorts before, with, or after `rhs`.
    @inline(__always)
    package func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int {
        let keys = compareKeys(lhs.key, rhs.key)
        if keys != 0 { return keys }
        return lhs.rowid < rhs.rowid ? -1 : (lhs.rowid == rhs.rowid ? 0 : 1)
    }

    func compareKeys(_ lhs: SortKey, _ rhs: SortKey) -> Int {
        for (term, rule) in rules.enumerated() {
            let result = Self.compare(lhs.value(at: term), rhs.value(at: term), rule)
            if result != 0 { return result }
        }
        return 0
    }

    static func compare(_ lhs: SQLValue, _ rhs: SQLValue, _ rule: Rule) -> Int {
        switch (lhs.isNull, rhs.isNull) {
        case (true, true): return 0
        case (true, false): return rule.nullsFirst ? -1 : 1
        case (false, true): return rule.nullsFirst ? 1 : -1
        case (false, false):
            let ascending = compareNonNull(lhs, rhs, rule.collation)
            return rule.descending ? -ascending : ascending
        }
    }

    static func storageRank(_ value: SQLValue) -> Int {
        switch value {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    static func compareNonNull(_ lhs: SQLValue, _ rhs: SQLValue, _ collation: SortTerm.Collation) -> Int {
        switch (lhs, rhs) {
        case let (.integer(a), .integer(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.real(a), .real(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.integer(a), .real(b)): return -compare(real: b, integer: a)
        case let (.real(a), .integer(b)): return compare(real: a, integer: b)
        case let (.text(a), .text(b)): return compareText(a, b, collation)
        case let (.blob(a), .blob(b)): return compareBytes(a, b)
        default: return storageRank(lhs) - storageRank(rhs)
        }
    }

    /// Exact comparison of a double with a 64-bit integer: no rounding through `Double`
    /// (`9007199254740993 > 9007199254740992.0`).
    static func compare(real: Double, integer: Int64) -> Int {
        if real < -9_223_372_036_854_775_808.0 { return -1 }
        if real >= 9_223_372_036_854_775_808.0 { return 1 }
        let truncated = real.rounded(.towardZero)
        let whole = Int64(truncated)
        if whole != integer { return whole < integer ? -1 : 1 }
        let fraction = real - truncated
        return fraction < 0 ? -1 : (fraction > 0 ? 1 : 0)
    }

    package static func compareText(_ lhs: SQLText, _ rhs: SQLText, _ collation: SortTerm.Collation) -> Int {
        lhs.withBytes { a in
            rhs.withBytes { b in
                switch collation {
                case .binary, .custom: return compareBytes(a, b)
                case .nocase: return compareNoCase(a, b)
                case .rtrim: return compareBytes(a.trimmingTrailingSpaces, b.trimmingTrailingSpaces)
                }
            }
        }
    }

    package static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in compareBytes(a, b) } }
    }

    /// memcmp of the common prefix, then the shorter first.
    static func compareBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let result = memcmp(pa, pb, common)
            if result != 0 { return result < 0 ? -1 : 1 }
        }
        return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    }

    /// SQLite's NOCASE: ASCII upper-case letters folded to lower case, every other byte as is, up
    /// to the first NUL of the left text (SQLite's `sqlite3StrNICmp` stops there); then the
    /// shorter first. (`'a\0x' = 'a\0y' COLLATE NOCASE` in SQLite.)
    static func compareNoCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        for index in 0..<common {
            if a[index] == 0 {
                if b[index] != 0 { return -1 }
                break
            }
            let x = fold(a[index]), y = fold(b[index])
            if x != y { return x < y ? -1 : 1 }
        }
        return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    }

    @inline(__always)
    static func fold(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// The value that stands for every value equal to `value` under `collation`, so that rows
    /// whose section column compares equal share one section.
    static func sectionKey(_ value: SQLValue, _ collation: SortTerm.Collation) -> SQLValue {
        switch value {
        case let .real(number):
            if let exact = Int64(exactly: number) { return .integer(exact) }
            return value
        case let .text(text):
            switch collation {
            case .nocase:
                guard text.withBytes({ $0.contains { $0 >= 0x41 && $0 <= 0x5A } }) else { return value }
                return .text(SQLText(bytes: text.bytes.map(fold)))
            case .rtrim:
                return .text(text.withBytes { SQLText(bytes: $0.trimmingTrailingSpaces) })
            case .binary, .custom: return value
            }
        default:
            return value
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    var trimmingTrailingSpaces: UnsafeBufferPointer<UInt8> {
        var end = count
        while end > 0 && self[end - 1] == 0x20 { end -= 1 }
        return UnsafeBufferPointer(rebasing: self[0..<end])
    }
}
