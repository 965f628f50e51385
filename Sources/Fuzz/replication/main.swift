import FuzzSupport
import LiveQueryPostgres

// What PostgreSQL's replication connection sends, as the engine reads it: each CopyData payload
// (`ReplicationMessage`: WAL data or a keepalive), the `pgoutput` message a WAL data message
// carries (`PgOutputMessage`), and the messages in order grouped into commits
// (`CommitDecoder`), whose relation descriptions the engine compares with what it planned
// against (`KnownRelations`). A message that does not parse, or comes out of place, is a typed
// error naming the byte where it stopped making sense; one that parses writes back to itself.
//
// An input is CopyData payloads, each preceded by its length in two bytes (big-endian).

/// A message written back as `pgoutput` writes it (the fields the parser skips as zeros).
func encoded(_ message: PgOutputMessage) -> [UInt8] {
    var bytes: [UInt8] = []
    func byte(_ value: UInt8) { bytes.append(value) }
    func integer(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
    func string(_ text: String) {
        bytes += Array(text.utf8)
        bytes.append(0)
    }
    func tuple(_ values: [PostgresTupleValue]) {
        integer(UInt64(values.count), width: 2)
        for value in values {
            switch value {
            case .null: byte(UInt8(ascii: "n"))
            case .unchanged: byte(UInt8(ascii: "u"))
            case let .text(text):
                byte(UInt8(ascii: "t"))
                integer(UInt64(text.count), width: 4)
                bytes += text
            }
        }
    }
    switch message {
    case let .begin(final, xid):
        byte(UInt8(ascii: "B")); integer(final.value, width: 8); integer(0, width: 8); integer(UInt64(xid), width: 4)
    case let .commit(commit, end):
        byte(UInt8(ascii: "C")); byte(0); integer(commit.value, width: 8); integer(end.value, width: 8); integer(0, width: 8)
    case let .relation(relation):
        byte(UInt8(ascii: "R")); integer(UInt64(relation.oid), width: 4); string(relation.schema); string(relation.name); byte(0)
        integer(UInt64(relation.columns.count), width: 2)
        for column in relation.columns {
            byte(column.isKey ? 1 : 0); string(column.name); integer(UInt64(column.typeOID), width: 4); integer(0, width: 4)
        }
    case let .insert(relation, new):
        byte(UInt8(ascii: "I")); integer(UInt64(relation), width: 4); byte(UInt8(ascii: "N")); tuple(new)
    case let .update(relation, old, new):
        byte(UInt8(ascii: "U")); integer(UInt64(relation), width: 4)
        if let old { byte(UInt8(ascii: "O")); tuple(old) }
        byte(UInt8(ascii: "N")); tuple(new)
    case let .delete(relation, old):
        byte(UInt8(ascii: "D")); integer(UInt64(relation), width: 4); byte(UInt8(ascii: "K")); tuple(old)
    case let .truncate(relations):
        byte(UInt8(ascii: "T")); integer(UInt64(relations.count), width: 4); byte(0)
        for relation in relations { integer(UInt64(relation), width: 4) }
    case let .other(tag):
        byte(tag)
    }
    return bytes
}

FuzzTarget.main { bytes in
    var input = FuzzBytes(bytes)
    var decoder = CommitDecoder()
    var known = KnownRelations()
    while !input.isAtEnd {
        let payload = input.chunk()
        let message: ReplicationMessage
        do throws(PgOutputFormatError) {
            message = try ReplicationMessage.parse(payload)
        } catch {
            precondition(error.offset.map { (0...payload.count).contains($0) } == true, "\(error) for \(payload.count) bytes")
            continue
        }
        guard case let .data(_, _, data) = message else { continue }
        precondition(payload.count == 25 + data.count)
        let change: PgOutputMessage
        do throws(PgOutputFormatError) {
            change = try PgOutputMessage.parse(data)
        } catch {
            precondition(error.offset.map { (0...data.count).contains($0) } == true, "\(error) for \(data.count) bytes")
            continue
        }
        // What parses writes back to the same message.
        precondition((try? PgOutputMessage.parse(encoded(change))) == change, "\(change) does not read back")
        do throws(PgOutputFormatError) {
            if var commit = try decoder.feed(change) {
                known.absorb(&commit)
                precondition(commit.reshaped.isSubset(of: Set(commit.described.map(\.oid))))
                precondition(commit.touched.keys.allSatisfy { decoder.relations[$0] != nil }, "a change to a relation never described")
            }
        } catch {
            precondition(error.offset == nil, "\(error): a message out of place names no byte")
        }
    }
}
