/// One message of PostgreSQL's `pgoutput` logical decoding plugin, protocol version 1, as the
/// replication stream carries them (the payload of each WAL data message). Only what a live query
/// needs is kept: which rows of which relation a committed transaction touched.
///
/// Format: PostgreSQL's documentation, "Logical Replication Message Formats". `package`, as the
/// types it carries: the replication fuzz target (`Sources/Fuzz/replication`) reads messages too.
package enum PgOutputMessage: Equatable, Sendable {
    /// A transaction begins; its commit will be at `finalLSN`.
    case begin(finalLSN: PostgresLSN, xid: UInt32)
    /// The transaction ends: `commitLSN` is its commit record, `endLSN` the position after it.
    case commit(commitLSN: PostgresLSN, endLSN: PostgresLSN)
    /// A relation's shape, sent before its first change in a session and after every change to it.
    case relation(PostgresRelation)
    case insert(relation: UInt32, new: [PostgresTupleValue])
    /// `old` is the old key (or whole old row) when the key changed or the table's replica
    /// identity is FULL; else the key is unchanged and in `new`.
    case update(relation: UInt32, old: [PostgresTupleValue]?, new: [PostgresTupleValue])
    case delete(relation: UInt32, old: [PostgresTupleValue])
    case truncate(relations: [UInt32])
    /// Origin, type and logical messages: nothing a list shows.
    case other(UInt8)
}

/// A relation as `pgoutput` describes it.
package struct PostgresRelation: Equatable, Sendable {
    package struct Column: Equatable, Sendable {
        package var name: String
        package var isKey: Bool
        package var typeOID: UInt32
    }

    package var oid: UInt32
    package var schema: String
    package var name: String
    package var columns: [Column]
}

/// A column value in a `pgoutput` tuple: PostgreSQL's text form of the value.
package enum PostgresTupleValue: Equatable, Sendable {
    case null
    /// A TOASTed value the change left as it was: not sent.
    case unchanged
    case text([UInt8])
}

/// A `pgoutput` message that does not parse, or a message out of place in the stream: a bug or a
/// protocol this parser does not know.
package struct PgOutputFormatError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    package var detail: String
    /// The byte of the message where it stopped making sense: the byte that is wrong, or the
    /// message's length when it ends too soon. `nil` when the message is well formed but comes out
    /// of place (a change outside a transaction, say).
    package var offset: Int?

    init(detail: String, offset: Int? = nil) {
        self.detail = detail
        self.offset = offset
    }

    package var description: String {
        offset.map { "malformed pgoutput message at byte \($0): \(detail)" } ?? "malformed pgoutput stream: \(detail)"
    }
}

extension PgOutputMessage {
    /// Parses one message. Bytes after a whole message are left unread (a later protocol version
    /// may add fields).
    /// - Complexity: O(bytes).
    package static func parse(_ bytes: [UInt8]) throws(PgOutputFormatError) -> PgOutputMessage {
        var reader = ByteReader(bytes)
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
            var columns: [PostgresRelation.Column] = []
            for _ in 0..<count {
                let flags = try reader.byte()
                let column = try reader.string()
                let type = try reader.uint32()
                _ = try reader.uint32()   // type modifier
                columns.append(.init(name: column, isKey: flags & 1 == 1, typeOID: type))
            }
            return .relation(PostgresRelation(oid: oid, schema: schema, name: name, columns: columns))
        case UInt8(ascii: "I"):
            let relation = try reader.uint32()
            guard try reader.byte() == UInt8(ascii: "N") else { throw reader.error("insert without a new tuple", back: 1) }
            return .insert(relation: relation, new: try reader.tuple())
        case UInt8(ascii: "U"):
            let relation = try reader.uint32()
            var kind = try reader.byte()
            var old: [PostgresTupleValue]?
            if kind == UInt8(ascii: "K") || kind == UInt8(ascii: "O") {
                old = try reader.tuple()
                kind = try reader.byte()
            }
            guard kind == UInt8(ascii: "N") else { throw reader.error("update without a new tuple", back: 1) }
            return .update(relation: relation, old: old, new: try reader.tuple())
        case UInt8(ascii: "D"):
            let relation = try reader.uint32()
            let kind = try reader.byte()
            guard kind == UInt8(ascii: "K") || kind == UInt8(ascii: "O") else { throw reader.error("delete without an old tuple", back: 1) }
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

/// Big-endian reads over a message's bytes, each checked against its end; every error names the
/// byte where the message stopped making sense — its end when it ends too soon, else the first
/// byte of the field that is wrong, every byte before which was read as a message's should be.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// An error about the byte `back` bytes before the next one.
    func error(_ detail: String, back: Int = 0) -> PgOutputFormatError {
        PgOutputFormatError(detail: detail, offset: offset - back)
    }

    mutating func byte() throws(PgOutputFormatError) -> UInt8 {
        guard offset < bytes.count else { throw error("the message ends") }   // offset == bytes.count
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next `count` bytes; a message that ends before them is malformed at its end.
    mutating func take(_ count: Int) throws(PgOutputFormatError) -> ArraySlice<UInt8> {
        guard count >= 0 else { throw error("a length of \(count)") }
        guard count <= bytes.count - offset else {
            throw PgOutputFormatError(detail: "the message ends \(count - (bytes.count - offset)) bytes short", offset: bytes.count)
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func uint16() throws(PgOutputFormatError) -> UInt16 { UInt16(try unsigned(2)) }
    mutating func uint32() throws(PgOutputFormatError) -> UInt32 { UInt32(try unsigned(4)) }
    mutating func uint64() throws(PgOutputFormatError) -> UInt64 { try unsigned(8) }

    private mutating func unsigned(_ width: Int) throws(PgOutputFormatError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try take(width) { value = value << 8 | UInt64(byte) }
        return value
    }

    /// A NUL-terminated string.
    mutating func string() throws(PgOutputFormatError) -> String {
        guard let end = bytes[offset...].firstIndex(of: 0) else {
            throw PgOutputFormatError(detail: "the message ends inside a string", offset: bytes.count)
        }
        defer { offset = end + 1 }
        return String(decoding: bytes[offset..<end], as: UTF8.self)
    }

    mutating func tuple() throws(PgOutputFormatError) -> [PostgresTupleValue] {
        let count = Int(try uint16())
        var values: [PostgresTupleValue] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            switch try byte() {
            case UInt8(ascii: "n"): values.append(.null)
            case UInt8(ascii: "u"): values.append(.unchanged)
            case UInt8(ascii: "t"), UInt8(ascii: "b"):
                let length = Int(Int32(bitPattern: try uint32()))
                guard length >= 0 else { throw error("a value of length \(length)", back: 4) }
                values.append(.text(Array(try take(length))))
            case let kind: throw error("a tuple value of kind \(kind)", back: 1)
            }
        }
        return values
    }
}
