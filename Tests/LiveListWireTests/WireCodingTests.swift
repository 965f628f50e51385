import Foundation
import ListDiff
import ListTesting
import LiveListWire
import Testing

@Suite("The wire's messages")
struct WireCodingTests {
    static let hostileTexts = ["", "e\u{301}", "\u{E9}", "\0", "a\0b", "😀", "\u{FEFF}", "\"\\/\n\t\u{1}", "i\u{307}", String(repeating: "ß", count: 300)]

    static func values() -> [WireValue] {
        var values: [WireValue] = [.null, .integer(0), .integer(-1), .integer(WireValue.largestPlainInteger),
                                   .integer(WireValue.largestPlainInteger + 1), .integer(.max), .integer(.min),
                                   .real(0.1), .real(-0.0), .real(1e300), .real(.leastNonzeroMagnitude), .real(2.0), .real(.infinity), .real(-.infinity),
                                   .blob([]), .blob([0]), .blob([0xFF, 0, 1]), .blob(Array(0...255))]
        values += hostileTexts.map { .text($0) }
        return values
    }

    @Test("Every value comes back exactly: integers to the last digit, reals to the bit, text code point for code point, blobs byte for byte")
    func valuesRoundTrip() throws {
        for value in Self.values() {
            let text = value.json.serialized
            let back = try WireValue(json: try JSONParser.parse(Array(text.utf8)))
            switch (value, back) {
            case let (.real(a), .real(b)): #expect(a.bitPattern == b.bitPattern || (a == 0 && b == 0), "\(text)")
            case let (.text(a), .text(b)): #expect(Array(a.unicodeScalars) == Array(b.unicodeScalars), "\(text)")
            default: #expect(back == value, "\(text)")
            }
        }
        // A big integer as a plain number would be rounded by a JavaScript client: it must be tagged.
        #expect(WireValue.integer(WireValue.largestPlainInteger + 1).json.serialized == "{\"i\":\"9007199254740992\"}")
        #expect(throws: WireDecodingError.self) { try WireValue(json: .integer(WireValue.largestPlainInteger + 1)) }
    }

    @Test("Client and server messages decode to what was encoded")
    func messagesRoundTrip() throws {
        let subscribe = ClientMessage.subscribe(WireSubscription(sub: 7, query: "inbox", arguments: ["folder": .text("e\u{301}"), "n": .integer(.max)],
                                                                 window: WireWindow(start: 10, count: 50),
                                                                 resume: WireResume(version: WireVersion(epoch: "ab9", sequence: 12), held: WireWindow(start: 10, count: 40))))
        for message in [subscribe, .window(sub: 7, WireWindow(start: 0, count: 1)), .unsubscribe(sub: 7),
                        .arguments(sub: 7, ["folder": .text("e\u{301}"), "n": .integer(1 << 60)]),
                        .mutate(WireMutation(client: "e\u{301}\0", id: WireMutation.maximumID, name: "archive", arguments: ["id": .integer(-1)]))] {
            #expect(try ClientMessage.decode(Array(message.encoded().utf8)) == message)
        }
        var changes = ListChanges()
        changes.sectionDeletes = [1]
        changes.sectionInserts = [0]
        changes.sectionMoves = [Move(from: 2, to: 3)]
        changes.itemDeletes = [ItemPath(section: 0, item: 4)]
        changes.itemInserts = [ItemPath(section: 1, item: 0)]
        changes.itemMoves = [Move(from: ItemPath(section: 0, item: 1), to: ItemPath(section: 1, item: 2))]
        changes.itemReloads = [ItemPath(section: 0, item: 0)]
        let version = WireVersion(epoch: "e", sequence: 1)
        let messages: [ServerMessage] = [
            .changes(WireChanges(sub: 3, from: version, to: version.next, changes: changes, insertedSectionKeys: [.text("2026-11-24")],
                                 insertedIDs: [.integer(5)], movedIDs: [.blob([1, 2])], reloadedIDs: [.text("\0")],
                                 rows: [WireRow(position: 0, id: .integer(5), values: [.text("😀"), .null]), WireRow(position: 1, id: .integer(6), values: nil)])),
            .reset(WireReset(sub: 3, version: version, reason: .slowClient, columns: ["id", "name"], sections: [WireSection(key: .null, count: 2)],
                             window: WireWindow(start: 0, count: 2), rows: [WireRow(position: 0, id: .integer(1), values: [.integer(1), .text("a")])])),
            .reset(WireReset(sub: 4, version: version, reason: .subscribed, columns: ["id", "name"], sections: [WireSection(key: .null, count: 0)],
                             window: WireWindow(start: 0, count: 2), rows: [],
                             order: WireOrder(terms: [WireOrderTerm(column: 1, descending: true, nullsFirst: false, collation: .rtrim),
                                                      WireOrderTerm(column: 0, nullsFirst: true, collation: .nocase),
                                                      WireOrderTerm(column: nil, nullsFirst: true)]))),
            .rows(WireRows(sub: 3, version: version, window: WireWindow(start: 5, count: 1), rows: [])),
            .error(WireError(sub: 3, code: .windowTooLarge, message: "too large")),
            .error(WireError(sub: nil, code: .queryClosed, message: "bye")),
            .error(WireError(sub: nil, code: .conflict, message: "gone", mutation: WireMutationID(client: "c", id: 9))),
            .mutated(WireMutated(client: "c", id: 9, versions: [3: version, 0: version.next], duplicate: true)),
        ]
        for message in messages {
            #expect(try ServerMessage.decode(Array(message.encoded().utf8)) == message)
            if let sub = message.sub { #expect(ServerMessage.frame(sub: sub, body: message.encodedBody()) == message.encoded()) }
        }
    }

    @Test("A mutate's client and number are checked: empty or long names, numbers outside 1...2^53")
    func mutateFieldsChecked() {
        for frame in [#"{"type":"mutate","client":"","id":1,"name":"a"}"#, #"{"type":"mutate","client":"c","id":0,"name":"a"}"#,
                      #"{"type":"mutate","client":"c","id":9007199254740993,"name":"a"}"#, #"{"type":"mutate","client":"c","id":1.5,"name":"a"}"#,
                      #"{"type":"mutate","client":"\#(String(repeating: "x", count: 129))","id":1,"name":"a"}"#,
                      #"{"type":"mutate","id":1,"name":"a"}"#] {
            #expect(throws: WireDecodingError.self, "\(frame)") { try ClientMessage.decode(Array(frame.utf8)) }
        }
    }

    @Test("A value not in the protocol's form, or a mutate's id written with a fraction or an exponent, refuses that request alone")
    func badArgumentsNameTheirRequest() {
        let cases: [(String, ClientMessage)] = [
            (#"{"type":"mutate","client":"c","id":7,"name":"archive","arguments":{"id":{"i":"99999999999999999999"}}}"#,
             .mutate(WireMutation(client: "c", id: 7, name: "archive"))),
            (#"{"type":"mutate","client":"c","id":8,"name":"archive","arguments":{"id":{"f":"nan"}}}"#,
             .mutate(WireMutation(client: "c", id: 8, name: "archive"))),
            (#"{"type":"mutate","client":"c","id":16.0,"name":"archive","arguments":{"id":1}}"#,
             .mutate(WireMutation(client: "c", id: 16, name: "archive"))),
            (#"{"type":"mutate","client":"c","id":1.6e1,"name":"archive"}"#, .mutate(WireMutation(client: "c", id: 16, name: "archive"))),
            (#"{"type":"subscribe","sub":3,"query":"inbox","arguments":{"folder":[1]},"window":[0,10]}"#,
             .subscribe(WireSubscription(sub: 3, query: "inbox", window: WireWindow(start: 0, count: 10)))),
            (#"{"type":"arguments","sub":4,"arguments":{"folder":"a","limit":9007199254740992}}"#, .arguments(sub: 4, [:])),
        ]
        for (frame, request) in cases {
            do {
                _ = try ClientMessage.decode(Array(frame.utf8))
                Issue.record("\(frame) decoded")
            } catch let .badArguments(refused, reason) {
                #expect(refused == request, "\(frame): \(refused)")
                #expect(reason.contains("\"id\"") || reason.contains("argument"), "\(reason)")
            } catch {
                Issue.record("\(frame): \(error)")
            }
        }
        // What is not a request of the protocol still is not: an id that is no integer, arguments that are no object.
        for frame in [#"{"type":"mutate","client":"c","id":16.5,"name":"a"}"#, #"{"type":"mutate","client":"c","id":"16","name":"a"}"#,
                      #"{"type":"subscribe","sub":1,"query":"q","arguments":[1],"window":[0,1]}"#] {
            do {
                _ = try ClientMessage.decode(Array(frame.utf8))
                Issue.record("\(frame) decoded")
            } catch .badArguments {
                Issue.record("\(frame) refused alone, not as a frame of another protocol")
            } catch {
                #expect(error.description.contains("field"), "\(frame): \(error)")
            }
        }
    }

    @Test("Malformed client frames are typed errors, never a crash: random bytes and mutations of valid frames (seed printed)")
    func fuzzedDecoder() throws {
        let seed = SeededRandomNumberGenerator.testSeed("wire fuzz")
        var random = SeededRandomNumberGenerator(seed: seed)
        func pick(_ bound: Int) -> Int { Int.random(in: 0..<max(1, bound), using: &random) }
        let valid = [
            #"{"type":"subscribe","sub":1,"query":"inbox","arguments":{"folder":"work","n":{"i":"9007199254740993"},"b":{"b":"AAE="}},"window":[0,60],"resume":{"version":"ab:3","held":[0,10]}}"#,
            #"{"type":"window","sub":1,"window":[100,60]}"#, #"{"type":"unsubscribe","sub":1}"#,
            #"{"type":"arguments","sub":1,"arguments":{"sort":"sender","filter":"é"}}"#,
            #"{"type":"mutate","client":"6f1c-é","id":7,"name":"archive","arguments":{"id":42,"note":"a\u0000b"}}"#,
        ].map { Array($0.utf8) }
        let tokens = Array(#"{}[]",:0123456789-.eE+truefalsnul\"/u"#.utf8) + [0, 0x80, 0xC3, 0xFF, 0x20]
        var decoded = 0, rejected = 0
        for round in 0..<20_000 {
            var bytes = valid[pick(valid.count)]
            if round % 4 == 0 {
                bytes = (0..<pick(64)).map { _ in tokens[pick(tokens.count)] }
            } else {
                for _ in 0..<(pick(4) + 1) {
                    let position = pick(bytes.count + 1)
                    switch pick(3) {
                    case 0 where position < bytes.count: bytes.remove(at: position)
                    case 1: bytes.insert(tokens[pick(tokens.count)], at: position)
                    default: if position < bytes.count { bytes[position] = tokens[pick(tokens.count)] }
                    }
                }
            }
            do {
                let message = try ClientMessage.decode(bytes)
                // Whatever decodes must encode to something that decodes to the same message.
                #expect(try ClientMessage.decode(Array(message.encoded().utf8)) == message, "seed \(seed), round \(round)")
                decoded += 1
            } catch {
                rejected += 1
            }
        }
        #expect(decoded > 100 && rejected > 1_000, "seed \(seed): \(decoded) decoded, \(rejected) rejected")
        // Deep nesting is refused at the message's depth, before any recursion to speak of.
        let deep = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        #expect(throws: WireDecodingError.self) { try ClientMessage.decode(deep) }
    }

    @Test("Versions read only their own form")
    func versions() {
        #expect(WireVersion("ab-9_z:0") == WireVersion(epoch: "ab-9_z", sequence: 0))
        for bad in ["", ":1", "a:", "a:-1", "a:01", "a b:1", "a:1:2x", String(repeating: "a", count: 65) + ":1"] {
            #expect(WireVersion(bad) == nil, "\(bad)")
        }
    }
}
