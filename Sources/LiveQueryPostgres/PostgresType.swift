import LiveQueryCore
import NIOCore

/// A PostgreSQL type a live query orders, groups or identifies rows by, and how its values are
/// held: as ``SQLValue``s whose order the type's comparison (``PostgresComparison``) gives exactly
/// as PostgreSQL's btree operator class does.
///
/// | type | held as | compared |
/// |---|---|---|
/// | smallint, integer, bigint, oid | integer | numerically |
/// | boolean | integer 0 / 1 | false < true |
/// | date | integer (days from 2000-01-01) | numerically, ±infinity at the ends |
/// | timestamp, timestamptz | integer (µs from 2000-01-01 UTC) | numerically |
/// | real, double precision | real | numerically, NaN above every number, -0 = 0 |
/// | numeric | text, the exact decimal | by value at any scale, NaN above ±Infinity |
/// | uuid | text, lowercase with hyphens | by bytes (PostgreSQL compares the 16 bytes) |
/// | bytea | blob | by bytes |
/// | text, varchar, name under C, POSIX or ucs_basic | text | by bytes |
enum PostgresType: Sendable, Equatable {
    case integer, boolean, date, timestamp, float, numeric, uuid, bytea, text

    init?(oid: UInt32) {
        switch oid {
        case 20, 21, 23, 26: self = .integer
        case 16: self = .boolean
        case 1082: self = .date
        case 1114, 1184: self = .timestamp
        case 700, 701: self = .float
        case 1700: self = .numeric
        case 2950: self = .uuid
        case 17: self = .bytea
        case 25, 1043, 19: self = .text
        default: return nil
        }
    }

    var comparison: PostgresComparison {
        switch self {
        case .integer, .boolean, .date, .timestamp: .integer
        case .float: .float
        case .numeric: .numeric
        case .uuid, .bytea, .text: .bytes
        }
    }

    /// Whether values of the type follow a collation.
    var isCollatable: Bool { self == .text }

    /// Whether a column of type `oid` goes on the wire as PostgreSQL sends it (numbers, booleans as
    /// 0 and 1, text, bytes, numerics and uuids as their exact text); every other type goes as
    /// PostgreSQL's text form of it.
    static func carriedAsIs(_ oid: UInt32) -> Bool {
        [20, 21, 23, 26, 16, 700, 701, 1700, 2950, 17, 25, 1043, 19, 1042].contains(oid)
    }

    /// A binary-format value as postgres-nio returns it (`nil` bytes: NULL).
    /// - Complexity: O(bytes).
    static func value(_ buffer: ByteBuffer?, oid: UInt32) -> SQLValue {
        guard var buffer else { return .null }
        switch oid {
        case 20: return buffer.readInteger(as: Int64.self).map(SQLValue.integer) ?? .null
        case 23: return buffer.readInteger(as: Int32.self).map { .integer(Int64($0)) } ?? .null
        case 21: return buffer.readInteger(as: Int16.self).map { .integer(Int64($0)) } ?? .null
        case 26: return buffer.readInteger(as: UInt32.self).map { .integer(Int64($0)) } ?? .null
        case 16: return buffer.readInteger(as: UInt8.self).map { .integer($0 == 0 ? 0 : 1) } ?? .null
        case 1082: return buffer.readInteger(as: Int32.self).map { .integer(Int64($0)) } ?? .null
        case 1114, 1184: return buffer.readInteger(as: Int64.self).map(SQLValue.integer) ?? .null
        case 700: return buffer.readInteger(as: UInt32.self).map { .real(Double(Float(bitPattern: $0))) } ?? .null
        case 701: return buffer.readInteger(as: UInt64.self).map { .real(Double(bitPattern: $0)) } ?? .null
        case 1700: return numeric(&buffer).map { .text(SQLText(bytes: Array($0.utf8))) } ?? .null
        case 2950:
            guard let bytes = buffer.readBytes(length: 16) else { return .null }
            return .text(SQLText(bytes: uuidText(bytes)))
        case 25, 1043, 19, 1042: return .text(SQLText(bytes: Array(buffer.readableBytesView)))
        default: return .blob(Array(buffer.readableBytesView))
        }
    }

    /// A key value in `pgoutput`'s text form, held as ``value(_:oid:)`` holds it; `nil` for a
    /// type a key cannot be matched by.
    static func keyValue(text bytes: [UInt8], oid: UInt32) -> SQLValue? {
        switch oid {
        case 20, 21, 23, 26:
            return Int64(String(decoding: bytes, as: UTF8.self)).map(SQLValue.integer)
        case 25, 1043, 19:
            return .text(SQLText(bytes: bytes))
        case 2950:
            return .text(SQLText(bytes: bytes.map { $0 >= 0x41 && $0 <= 0x46 ? $0 | 0x20 : $0 }))
        default:
            return nil
        }
    }

    static func uuidText(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return text
    }

    /// numeric's binary form (base-10000 digits, weight, sign, display scale) as its exact text,
    /// with the display scale PostgreSQL prints.
    static func numeric(_ buffer: inout ByteBuffer) -> String? {
        guard let count = buffer.readInteger(as: Int16.self), let weight = buffer.readInteger(as: Int16.self),
              let sign = buffer.readInteger(as: UInt16.self), let scale = buffer.readInteger(as: Int16.self) else { return nil }
        switch sign {
        case 0xC000: return "NaN"
        case 0xD000: return "Infinity"
        case 0xF000: return "-Infinity"
        default: break
        }
        var groups: [Int16] = []
        for _ in 0..<max(0, Int(count)) {
            guard let group = buffer.readInteger(as: Int16.self) else { return nil }
            groups.append(group)
        }
        // Group i stands for group × 10000^(weight − i).
        var integer = ""
        if weight >= 0 {
            for position in 0...Int(weight) {
                let group = position < groups.count ? Int(groups[position]) : 0
                let text = String(group)
                integer += integer.isEmpty ? text : String(repeating: "0", count: 4 - text.count) + text
            }
        }
        if integer.isEmpty || integer.allSatisfy({ $0 == "0" }) { integer = "0" }
        var fraction = ""
        if scale > 0 {
            var position = Int(weight) + 1
            while fraction.count < Int(scale) {
                let group = position >= 0 && position < groups.count ? Int(groups[position]) : 0
                let text = String(group)
                fraction += String(repeating: "0", count: 4 - text.count) + text
                position += 1
            }
            fraction = String(fraction.prefix(Int(scale)))
        }
        let negative = sign == 0x4000 && (integer != "0" || fraction.contains { $0 != "0" })
        return (negative ? "-" : "") + integer + (fraction.isEmpty ? "" : "." + fraction)
    }
}

/// How values of one type compare.
enum PostgresComparison: Sendable, Equatable {
    case integer, float, numeric, bytes
}
