/// One message of PostgreSQL's `pgoutput` logical decoding plugin, protocol version 1, as the
/// replication stream carries them (the payload of each WAL data message). Only what a live query
/// needs is kept: which rows of which relation a committed transaction touched.
///
/// Format: PostgreSQL's documentation, "Logical Replication Message Formats".
enum _PgOutputMessage: Equatable, Sendable {
    /// A transaction begins; its commit will be at `finalLSN`.
    case begin(finalLSN: PostgresLSN, xid: UInt32)
    /// The transaction ends: `commitLSN` is its commit record, `endLSN` the position after it.
    case commit(commitLSN: PostgresLSN, endLSN: PostgresLSN)
    /// A relation's shape, sent before its first change in a session and after every change to it.
    case relation(_PostgresRelation)
    case insert(relation: UInt32, new: [_PostgresTupleValue])
    /// `old` is the old key (or whole old row) when the key changed or the table's replica
    /// identity is FULL; else the key is unchanged and in `new`.
    case update(relation: UInt32, old: [_PostgresTupleValue]?, new: [_PostgresTupleValue])
    case delete(relation: UInt32, old: [_PostgresTupleValue])
    case truncate(relations: [UInt32])
    /// Origin, type and logical messages: nothing a list shows.
    case other(UInt8)
}

/// A relation as `pgoutput` describes it.
struct _PostgresRelation: Equatable, Sendable {
    struct Column: Equatable, Sendable {
        var name: String
        var isKey: Bool
        var typeOID: UInt32
    }

    var oid: UInt32
    var schema: String
    var name: String
    var columns: [Column]
}

/// A column value in a `pgoutput` tuple: PostgreSQL's text form of the value.
enum _PostgresTupleValue: Equatable, Sendable {
    case null
    /// A TOASTed value the change left as it was: not sent.
    case unchanged
    case text([UInt8])
}

/// A `pgoutput` message that does not parse: a bug or a protocol this parser does not know.
struct _PgOutputFormatError: Error, Equatable, CustomStringConvertible {
    var detail: String
    var description: String { "malformed pgoutput message: \(detail)" }
}

extension _PgOutputMessage {
    /// Parses one message.
    /// - Complexity: O(bytes).
    static func parse(_ bytes: [UInt8]) throws(_PgOutputFormatError) -> _PgOutputMessage {
        var reader = _ByteReader(bytes)
        let tag = try reader.byte()
        switch tag {
        case UInt8(ascii: "B"):
            let final = PostgresLSN(try reader.uint64())
            _ = try reader.uint64()   // commit timestamp
            return .begin(finalLSN: final, xid: try reader.uint32())
        case UInt8(ascii: "C"):
            _ = try reader.byte()   // flags
            let commit = PostgresLSN(try reader.uint64())
            let end = PostgresLSN(try reader.uint64())
            return .commit(commitLSN: commit, endLSN: end)
        case UInt8(ascii: "R"):
            let oid = try reader.uint32()
            let schema = try reader.string()
            let name = try reader.string()
            _ = try reader.byte()   // replica identity setting
            let count = Int(try reader.uint16())
            var columns: [_PostgresRelation.Column] = []
            for _ in 0..<count {
                let flags = try reader.byte()
                let column = try reader.string()
                let type = try reader.uint32()
                _ = try reader.uint32()   // type modifier
                columns.append(.init(name: column, isKey: flags & 1 == 1, typeOID: type))
            }
            return .relation(_PostgresRelation(oid: oid, schema: schema, name: name, columns: columns))
        case UInt8(ascii: "I"):
            let relation = try reader.uint32()
            guard try reader.byte() == UInt8(ascii: "N") else { throw _PgOutputFormatError(detail: "insert without a new tuple") }
            return .insert(relation: relation, new: try reader.tuple())
        case UInt8(ascii: "U"):
            let relation = try reader.uint32()
            var kind = try reader.byte()
            var old: [_PostgresTupleValue]?
            if kind == UInt8(ascii: "K") || kind == UInt8(ascii: "O") {
                old = try reader.tuple()
                kind = try reader.byte()
            }
            guard kind == UInt8(ascii: "N") else { throw _PgOutputFormatError(detail: "update without a new tuple") }
            return .update(relation: relation, old: old, new: try reader.tuple())
        case UInt8(ascii: "D"):
            let relation = try reader.uint32()
            let kind = try reader.byte()
            guard kind == UInt8(ascii: "K") || kind == UInt8(ascii: "O") else { throw _PgOutputFormatError(detail: "delete without an old tuple") }
            return .delete(relation: relation, old: try reader.tuple())
        case UInt8(ascii: "T"):
            let count = Int(try reader.uint32())
            _ = try reader.byte()   // options
            var relations: [UInt32] = []
            for _ in 0..<count { relations.append(try reader.uint32()) }
            return .truncate(relations: relations)
        default:
            return .other(tag)
        }
    }
}

/// Big-endian reads over a message's bytes, each checked against its end.
struct _ByteReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() throws(_PgOutputFormatError) -> UInt8 {
        guard offset < bytes.count else { throw _PgOutputFormatError(detail: "ends at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func take(_ count: Int) throws(_PgOutputFormatError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else {
            throw _PgOutputFormatError(detail: "\(count) bytes wanted at byte \(offset) of \(bytes.count)")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func uint16() throws(_PgOutputFormatError) -> UInt16 { UInt16(try unsigned(2)) }
    mutating func uint32() throws(_PgOutputFormatError) -> UInt32 { UInt32(try unsigned(4)) }
    mutating func uint64() throws(_PgOutputFormatError) -> UInt64 { try unsigned(8) }

    private mutating func unsigned(_ width: Int) throws(_PgOutputFormatError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try take(width) { value = value << 8 | UInt64(byte) }
        return value
    }

    /// A NUL-terminated string.
    mutating func string() throws(_PgOutputFormatError) -> String {
        guard let end = bytes[offset...].firstIndex(of: 0) else { throw _PgOutputFormatError(detail: "unterminated string at byte \(offset)") }
        defer { offset = end + 1 }
        return String(decoding: bytes[offset..<end], as: UTF8.self)
    }

    mutating func tuple() throws(_PgOutputFormatError) -> [_PostgresTupleValue] {
        let count = Int(try uint16())
        var values: [_PostgresTupleValue] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            switch try byte() {
            case UInt8(ascii: "n"): values.append(.null)
            case UInt8(ascii: "u"): values.append(.unchanged)
            case UInt8(ascii: "t"), UInt8(ascii: "b"):
                let length = Int(Int32(bitPattern: try uint32()))
                values.append(.text(Array(try take(length))))
            case let kind: throw _PgOutputFormatError(detail: "tuple value of kind \(kind)")
            }
        }
        return values
    }
}
