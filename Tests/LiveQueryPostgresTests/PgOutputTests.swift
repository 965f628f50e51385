import Foundation
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import NIOCore
import Testing

/// The parts of the engine that are values: pgoutput messages, their grouping into commits,
/// snapshot visibility, numeric text and its order — without a server.
struct PgOutputTests {
    static func bytes(_ parts: [Any]) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            switch part {
            case let byte as UInt8: out.append(byte)
            case let character as Character: out.append(UInt8(ascii: character.unicodeScalars.first ?? "?"))
            case let value as UInt16: out += withUnsafeBytes(of: value.bigEndian, Array.init)
            case let value as UInt32: out += withUnsafeBytes(of: value.bigEndian, Array.init)
            case let value as UInt64: out += withUnsafeBytes(of: value.bigEndian, Array.init)
            case let text as String: out += Array(text.utf8) + [0]
            case let raw as [UInt8]: out += raw
            default: Issue.record("unknown part \(part)")
            }
        }
        return out
    }

    static func tuple(_ values: [String?]) -> [Any] {
        var parts: [Any] = [UInt16(values.count)]
        for value in values {
            if let value {
                parts += [Character("t"), UInt32(value.utf8.count), Array(value.utf8)]
            } else {
                parts.append(Character("n"))
            }
        }
        return parts
    }

    static let relation = bytes([Character("R"), UInt32(16384), "public", "item", UInt8(100), UInt16(2),
                                 UInt8(1), "id", UInt32(20), UInt32(0xFFFF_FFFF), UInt8(0), "name", UInt32(25), UInt32(0xFFFF_FFFF)])

    @Test("every message a live query reads parses to what it says")
    func messages() throws {
        #expect(try PgOutputMessage.parse(Self.bytes([Character("B"), UInt64(0x1_0000_0010), UInt64(7), UInt32(726)]))
                == .begin(finalLSN: PostgresLSN(0x1_0000_0010), xid: 726))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("C"), UInt8(0), UInt64(0x10), UInt64(0x38), UInt64(9)]))
                == .commit(commitLSN: PostgresLSN(0x10), endLSN: PostgresLSN(0x38)))
        #expect(try PgOutputMessage.parse(Self.relation) == .relation(PostgresRelation(oid: 16384, schema: "public", name: "item", columns: [
            .init(name: "id", isKey: true, typeOID: 20), .init(name: "name", isKey: false, typeOID: 25)])))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("I"), UInt32(16384), Character("N")] + Self.tuple(["1", "Zoë"])))
                == .insert(relation: 16384, new: [.text(Array("1".utf8)), .text(Array("Zoë".utf8))]))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("U"), UInt32(16384), Character("K")] + Self.tuple(["1", nil])
                                                         + [Character("N")] + Self.tuple(["2", "x"])))
                == .update(relation: 16384, old: [.text(Array("1".utf8)), .null], new: [.text(Array("2".utf8)), .text(Array("x".utf8))]))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("U"), UInt32(16384), Character("N"), UInt16(2), Character("t"), UInt32(1),
                                                          Array("3".utf8), Character("u")]))
                == .update(relation: 16384, old: nil, new: [.text(Array("3".utf8)), .unchanged]))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("D"), UInt32(16384), Character("K")] + Self.tuple(["4", nil])))
                == .delete(relation: 16384, old: [.text(Array("4".utf8)), .null]))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("T"), UInt32(2), UInt8(0), UInt32(16384), UInt32(16390)]))
                == .truncate(relations: [16384, 16390]))
        #expect(try PgOutputMessage.parse(Self.bytes([Character("Y"), UInt32(1)])) == .other(UInt8(ascii: "Y")))
    }

    /// The byte that parsing `bytes` names when it fails (`nil`: it parses; `.some(nil)`: an
    /// error that names none).
    static func failure(_ bytes: [UInt8]) -> Int?? {
        do {
            _ = try PgOutputMessage.parse(bytes)
            return nil
        } catch {
            return .some(error.offset)
        }
    }

    /// `message` written as `pgoutput` writes it, the fields the parser skips as zeros.
    static func encoded(_ message: PgOutputMessage) -> [UInt8] {
        func tuple(_ values: [PostgresTupleValue]) -> [Any] {
            var parts: [Any] = [UInt16(values.count)]
            for value in values {
                switch value {
                case .null: parts.append(Character("n"))
                case .unchanged: parts.append(Character("u"))
                case let .text(text): parts += [Character("t"), UInt32(text.count), text]
                }
            }
            return parts
        }
        switch message {
        case let .begin(final, xid): return bytes([Character("B"), final.value, UInt64(0), xid])
        case let .commit(commit, end): return bytes([Character("C"), UInt8(0), commit.value, end.value, UInt64(0)])
        case let .relation(relation):
            var parts: [Any] = [Character("R"), relation.oid, relation.schema, relation.name, UInt8(0), UInt16(relation.columns.count)]
            for column in relation.columns { parts += [UInt8(column.isKey ? 1 : 0), column.name, column.typeOID, UInt32(0)] }
            return bytes(parts)
        case let .insert(relation, new): return bytes([Character("I"), relation, Character("N")] + tuple(new))
        case let .update(relation, old, new):
            return bytes([Character("U"), relation] + (old.map { [Character("O")] + tuple($0) } ?? []) + [Character("N")] + tuple(new))
        case let .delete(relation, old): return bytes([Character("D"), relation, Character("K")] + tuple(old))
        case let .truncate(relations): return bytes([Character("T"), UInt32(relations.count), UInt8(0)] + relations.map { $0 as Any })
        case let .other(tag): return [tag]
        }
    }

    @Test("a message cut anywhere names its end; random bytes parse to a message that writes back to itself, or name the byte where they stop being one (seed printed)")
    func malformed() throws {
        let whole = Self.bytes([Character("U"), UInt32(16384), Character("K")] + Self.tuple(["1", nil]) + [Character("N")] + Self.tuple(["2", "x"]))
        for end in 0..<whole.count { #expect(Self.failure(Array(whole[0..<end])) == .some(end), "cut at \(end)") }
        let seed = SeededRandomNumberGenerator.testSeed("pgoutput fuzz")
        var random = SeededRandomNumberGenerator(seed: seed)
        var decoder = CommitDecoder()
        var (parsed, refused) = (0, 0)
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if let first = bytes.first, Bool.random(using: &random) { bytes[0] = Array("BCRIUDT".utf8)[Int(first) % 7] }
            let message: PgOutputMessage
            do {
                message = try PgOutputMessage.parse(bytes)
            } catch {
                // Every byte before the one named was read as a message's should be: the message
                // cut there runs out exactly there.
                let offset = try #require(error.offset, "seed \(seed), round \(round): \(error)")
                #expect(offset <= bytes.count, "seed \(seed), round \(round): \(error)")
                if offset < bytes.count {
                    #expect(Self.failure(Array(bytes[0..<offset])) == .some(offset), "seed \(seed), round \(round): \(error)")
                }
                refused += 1
                continue
            }
            parsed += 1
            #expect(try PgOutputMessage.parse(Self.encoded(message)) == message, "seed \(seed), round \(round): \(message)")
            // Out of place in the stream: an error that names no byte.
            do {
                _ = try decoder.feed(message)
            } catch {
                #expect(error.offset == nil, "seed \(seed), round \(round): \(error)")
            }
        }
        #expect(parsed > 100 && refused > 1_000, "seed \(seed): \(parsed) parsed, \(refused) refused")
    }

    @Test("commits group their changes by relation and key; the relations they describe and their truncations are reported")
    func commits() throws {
        var decoder = CommitDecoder()
        #expect(throws: PgOutputFormatError.self) { try decoder.feed(.insert(relation: 16384, new: [.text([0x31]), .null])) }
        let relation = try PgOutputMessage.parse(Self.relation)
        #expect(try decoder.feed(.begin(finalLSN: PostgresLSN(0x50), xid: 9)) == nil)
        #expect(try decoder.feed(relation) == nil)
        _ = try decoder.feed(.insert(relation: 16384, new: [.text([0x31]), .text([0x61])]))
        _ = try decoder.feed(.update(relation: 16384, old: [.text([0x31]), .null], new: [.text([0x32]), .text([0x62])]))
        _ = try decoder.feed(.delete(relation: 16384, old: [.text([0x33]), .null]))
        #expect(throws: PgOutputFormatError.self) { try decoder.feed(.insert(relation: 16384, new: [.text([0x31])])) }
        let commit = try #require(try decoder.feed(.commit(commitLSN: PostgresLSN(0x50), endLSN: PostgresLSN(0x78))))
        #expect(commit.xid == 9 && commit.commitLSN == PostgresLSN(0x50) && commit.endLSN == PostgresLSN(0x78))
        #expect(commit.touched[16384] == [[.text([0x31])], [.text([0x31])], [.text([0x32])], [.text([0x33])]])
        #expect(commit.described.map(\.oid) == [16384] && commit.reshaped.isEmpty && commit.truncated.isEmpty)
        #expect(throws: PgOutputFormatError.self) { try decoder.feed(.insert(relation: 16384, new: [.text([0x31]), .null])) }

        _ = try decoder.feed(.begin(finalLSN: PostgresLSN(0x90), xid: 10))
        _ = try decoder.feed(relation)   // sent again in a new decoding session: the same shape
        var added = try #require({ if case let .relation(r) = relation { return r } else { return nil } }())
        added.columns.append(.init(name: "extra", isKey: false, typeOID: 23))
        _ = try decoder.feed(.relation(added))
        _ = try decoder.feed(.truncate(relations: [16384]))
        #expect(throws: PgOutputFormatError.self) { try decoder.feed(.begin(finalLSN: PostgresLSN(0x91), xid: 11)) }
        var second = try #require(try decoder.feed(.commit(commitLSN: PostgresLSN(0x90), endLSN: PostgresLSN(0xA0))))
        #expect(second.truncated == [16384] && second.touched.isEmpty && second.described.count == 2)
        #expect(throws: PgOutputFormatError.self) { try decoder.feed(.commit(commitLSN: PostgresLSN(1), endLSN: PostgresLSN(2))) }

        // The engine compares what the stream describes with what it planned against.
        var known = KnownRelations()
        guard case let .relation(planned) = relation else { return }
        known.planned(planned)
        var first = commit
        known.absorb(&first)
        #expect(first.reshaped.isEmpty)
        known.absorb(&second)
        #expect(second.reshaped == [16384] && known[16384] == added)
        #expect(second.relations == [16384])
    }

    @Test("a snapshot sees committed transactions below xmax that were not running, across an xid epoch")
    func snapshots() throws {
        let snapshot = try #require(PostgresSnapshot("100:105:100,103"))
        #expect(snapshot.sees(committed: 99))
        #expect(!snapshot.sees(committed: 100))
        #expect(snapshot.sees(committed: 101))
        #expect(!snapshot.sees(committed: 103))
        #expect(!snapshot.sees(committed: 105))
        #expect(!snapshot.sees(committed: 200))
        let epoch = try #require(PostgresSnapshot("\(UInt64(1) << 32 + 5):\(UInt64(1) << 32 + 10):"))
        #expect(epoch.sees(committed: 7))              // 2^32 + 7
        #expect(epoch.sees(committed: 4_294_967_000))  // the epoch before
        #expect(!epoch.sees(committed: 10))            // 2^32 + 10: xmax, not yet started
        #expect(!epoch.sees(committed: 12))            // started after the snapshot, whatever the epoch
        #expect(PostgresSnapshot("x:1:") == nil && PostgresSnapshot("1:2") == nil)
        #expect(PostgresLSN("16/B374D848") == PostgresLSN(0x16_B374_D848) && PostgresLSN(0x16_B374_D848).description == "16/B374D848")
        #expect(PostgresLSN("nope") == nil)
    }

    @Test("numeric text orders by value at any scale, with NaN above Infinity; sections join equal values")
    func decimals() {
        let ordered = ["-Infinity", "-99999999999999999999.5", "-10", "-1.5", "-1", "-0.00000000000000000001", "0", "0.00000000000000000001",
                       "0.1", "0.10000000000000000000000001", "1", "1.5", "10", "99999999999999999999.5", "123456789012345678901234567890",
                       "Infinity", "NaN"]
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                let expected = i < j ? -1 : (i == j ? 0 : 1)
                #expect(NumericText.compare(Array(a.utf8), Array(b.utf8)) == expected, "\(a) vs \(b)")
            }
        }
        #expect(NumericText.compare(Array("1.000".utf8), Array("1".utf8)) == 0)
        #expect(NumericText.compare(Array("0.000".utf8), Array("0".utf8)) == 0)
        #expect(NumericText.canonical(Array("-12.3400".utf8)) == Array("-12.34".utf8))
        #expect(NumericText.canonical(Array("0.000".utf8)) == Array("0".utf8))
        #expect(PostgresOrdering.compareFloat(.nan, .infinity) == 1 && PostgresOrdering.compareFloat(-0.0, 0) == 0)
    }

    @Test("numeric's binary form reads as PostgreSQL prints it")
    func numericBinary() {
        func numeric(_ groups: [Int16], weight: Int16, sign: UInt16, scale: Int16) -> String? {
            var buffer = ByteBuffer()
            buffer.writeInteger(Int16(groups.count))
            buffer.writeInteger(weight)
            buffer.writeInteger(sign)
            buffer.writeInteger(scale)
            for group in groups { buffer.writeInteger(group) }
            return PostgresType.numeric(&buffer)
        }
        #expect(numeric([1, 2345], weight: 1, sign: 0, scale: 0) == "12345")
        #expect(numeric([12, 3400], weight: 0, sign: 0x4000, scale: 4) == "-12.3400")
        #expect(numeric([1], weight: -1, sign: 0, scale: 4) == "0.0001")
        #expect(numeric([1], weight: -5, sign: 0, scale: 20) == "0.00000000000000000001")
        #expect(numeric([], weight: 0, sign: 0, scale: 3) == "0.000")
        #expect(numeric([1], weight: 2, sign: 0, scale: 0) == "100000000")
        #expect(numeric([], weight: 0, sign: 0xC000, scale: 0) == "NaN")
        #expect(numeric([], weight: 0, sign: 0xF000, scale: 0) == "-Infinity")
    }
}
