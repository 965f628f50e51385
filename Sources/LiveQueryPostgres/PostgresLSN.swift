/// A position in PostgreSQL's write-ahead log (`pg_lsn`): what a PostgreSQL live query's versions
/// are. Every update leads to the commit LSN of the last commit it includes, so versions from
/// different servers over one database compare.
public struct PostgresLSN: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 64-bit position.
    public var value: UInt64

    /// The position `value`, as `pg_lsn` holds it.
    public init(_ value: UInt64) { self.value = value }

    /// Parses PostgreSQL's text form, two hexadecimal halves: `16/B374D848`.
    public init?(_ text: String) {
        let halves = text.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, let high = UInt32(halves[0], radix: 16), let low = UInt32(halves[1], radix: 16) else { return nil }
        value = UInt64(high) << 32 | UInt64(low)
    }

    /// The text form PostgreSQL reads and prints.
    public var description: String {
        String(value >> 32, radix: 16, uppercase: true) + "/" + String(value & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    /// Whether `lhs` is earlier in the WAL.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }

    /// Before every commit.
    public static let zero = PostgresLSN(0)
}
