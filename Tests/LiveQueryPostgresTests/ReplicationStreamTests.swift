import Foundation
import ListTesting
@testable import LiveQueryPostgres
import Testing

/// The replication protocol's messages and the stream's schedule, without a server.
@Suite struct ReplicationStreamTests {
    static func bytes(_ tag: Character, _ words: [UInt64], _ tail: [UInt8] = []) -> [UInt8] {
        var bytes = [UInt8(ascii: tag.unicodeScalars.first ?? "?")]
        for word in words { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) } }
        return bytes + tail
    }

    @Test("WAL data and keepalives parse; a status update carries the received and applied positions and the reply request")
    func messages() throws {
        #expect(try ReplicationMessage.parse(Self.bytes("w", [0x10, 0x20, 7], [0x42, 0x43]))
                == .data(start: PostgresLSN(0x10), serverEnd: PostgresLSN(0x20), payload: [0x42, 0x43]))
        #expect(try ReplicationMessage.parse(Self.bytes("k", [0x30, 9], [1])) == .keepalive(sentThrough: PostgresLSN(0x30), replyNow: true))
        #expect(try ReplicationMessage.parse(Self.bytes("k", [0x30, 9], [0])) == .keepalive(sentThrough: PostgresLSN(0x30), replyNow: false))
        let update = ReplicationMessage.statusUpdate(received: PostgresLSN(0x0102), applied: PostgresLSN(0x0304), replyNow: true,
                                                      at: Date(timeIntervalSince1970: 946_684_801))
        #expect(update == Self.bytes("r", [0x0102, 0x0102, 0x0304, 1_000_000], [1]))
    }

    @Test("a message cut anywhere names its end; random bytes parse to the fields they hold, or name the byte where they stop being a message (seed printed)")
    func malformed() throws {
        func offset(_ bytes: [UInt8]) -> Int?? {
            do {
                _ = try ReplicationMessage.parse(bytes)
                return nil
            } catch {
                return .some(error.offset)
            }
        }
        let whole = Self.bytes("k", [0x30, 9], [1])
        for end in 0..<whole.count { #expect(offset(Array(whole[0..<end])) == .some(end), "cut at \(end)") }
        #expect(offset(whole + [0]) == .some(whole.count), "a keepalive one byte too long names its first extra byte")
        let seed = SeededRandomNumberGenerator.testSeed("replication message fuzz")
        var random = SeededRandomNumberGenerator(seed: seed)
        func word(_ bytes: [UInt8], at start: Int) -> UInt64 { bytes[start..<start + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if let first = bytes.first, Bool.random(using: &random) { bytes[0] = Array("wk".utf8)[Int(first) % 2] }
            let context = "seed \(seed), round \(round): \(bytes)"
            do {
                switch try ReplicationMessage.parse(bytes) {
                case let .data(start, end, payload):
                    #expect(bytes[0] == UInt8(ascii: "w") && start.value == word(bytes, at: 1) && end.value == word(bytes, at: 9)
                            && payload == Array(bytes[25...]), "\(context)")
                case let .keepalive(sent, replyNow):
                    #expect(bytes.count == 18 && bytes[0] == UInt8(ascii: "k") && sent.value == word(bytes, at: 1) && replyNow == (bytes[17] == 1),
                            "\(context)")
                }
            } catch {
                // The byte named: the first for another type, the end for one cut short, the first
                // extra byte for a keepalive too long.
                let expected = switch bytes.first {
                case UInt8(ascii: "w")?: bytes.count
                case UInt8(ascii: "k")?: min(bytes.count, 18)
                default: 0
                }
                #expect(error.offset == expected, "\(context): \(error)")
            }
        }
    }

    @Test("the stream reports what was applied at once, asks for a keepalive every interval, and is dead when none comes")
    func schedule() {
        let start = ContinuousClock.now
        var schedule = StreamSchedule(started: PostgresLSN(100), applied: PostgresLSN(100), at: start, interval: .seconds(1), deadAfter: .seconds(4))
        #expect(schedule.update(at: start) == nil)
        // The engine applied more: an update now, without asking for a reply.
        schedule.confirmed(PostgresLSN(150))
        schedule.reached(PostgresLSN(160))
        let applied = schedule.update(at: start.advanced(by: .milliseconds(5)))
        #expect(applied?.received == PostgresLSN(160) && applied?.applied == PostgresLSN(150) && applied?.replyNow == false)
        #expect(schedule.update(at: start.advanced(by: .milliseconds(6))) == nil)
        // The engine asks how far the server decoded: an update asking for a keepalive.
        schedule.positionWanted()
        #expect(schedule.update(at: start.advanced(by: .milliseconds(7)))?.replyNow == true)
        schedule.arrived(at: start.advanced(by: .milliseconds(8)))
        // The server asks for a reply: an update, no request of ours.
        schedule.serverAsked()
        #expect(schedule.update(at: start.advanced(by: .milliseconds(9)))?.replyNow == false)
        // A second of nothing: the periodic update asks for a keepalive…
        let later = start.advanced(by: .milliseconds(1_010))
        #expect(schedule.update(at: later)?.replyNow == true)
        #expect(!schedule.isDead(at: later.advanced(by: .seconds(3))))
        #expect(schedule.nextDeadline() == later.advanced(by: .seconds(1)))
        // …and a connection that brings nothing back within four seconds is dead.
        #expect(schedule.isDead(at: later.advanced(by: .seconds(4))))
        schedule.arrived(at: later.advanced(by: .seconds(2)))
        #expect(!schedule.isDead(at: later.advanced(by: .seconds(4))))
    }

    @Test("the engine's connection string names the same server, role, database and TLS mode, quoted")
    func conninfo() {
        let tcp = PostgresDatabaseRunner.conninfo(.init(host: "db.internal", port: 6543, username: "app", password: "it's\\x", database: "inbox", tls: .disable))
        #expect(tcp.contains("host='db.internal'") && tcp.contains("port='6543'") && tcp.contains("user='app'") && tcp.contains("dbname='inbox'"))
        #expect(tcp.contains("password='it\\'s\\\\x'") && tcp.contains("sslmode='disable'") && tcp.contains("replication='database'"))
        let socket = PostgresDatabaseRunner.conninfo(.init(unixSocketPath: "/tmp/pg/.s.PGSQL.5433", username: "postgres", password: nil, database: "app"))
        #expect(socket.contains("host='/tmp/pg'") && socket.contains("port='5433'") && !socket.contains("password"))
    }
}
