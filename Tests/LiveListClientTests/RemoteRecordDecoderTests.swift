import Foundation
import LiveListClient
import LiveListWire
import Testing

@Suite("Remote rows decoded into the app's records")
struct RemoteRecordDecoderTests {
    struct Message: Decodable, Equatable {
        var id: Int64
        var sender: String
        var score: Double
        var unread: Bool
        var avatar: Data?
        var sent: Date
        var key: UUID
        var flags: UInt8?
    }

    static func record(_ pairs: KeyValuePairs<String, WireValue>) -> RemoteRecord {
        RemoteRecord(id: pairs.first?.value ?? .null, columns: pairs.map(\.key), values: pairs.map(\.value))
    }

    static let key = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    static func message(id: WireValue = .integer(9_007_199_254_740_993), score: WireValue = .real(0.1), unread: WireValue = .integer(1),
                        sent: WireValue = .text("2026-11-27 10:00:00.000"), key: WireValue = .text("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"),
                        flags: WireValue = .null) -> RemoteRecord {
        record(["id": id, "sender": .text("Zoë\u{0}"), "score": score, "unread": unread, "avatar": .blob([0, 255]), "sent": sent,
                "key": key, "flags": flags])
    }

    @Test("every kind decodes exactly: Int64 past 2^53, text with NUL, bytes, Bool, dates in SQLite's and ISO text or seconds, UUID text or bytes, NULL as nil")
    func exactKinds() throws {
        let decoder = RemoteRecordDecoder()
        let decoded = try decoder.decode(Message.self, from: Self.message())
        let expectedDate = Date(timeIntervalSince1970: 1_795_773_600)
        #expect(decoded == Message(id: 9_007_199_254_740_993, sender: "Zoë\u{0}", score: 0.1, unread: true, avatar: Data([0, 255]),
                                   sent: expectedDate, key: Self.key, flags: nil))
        #expect(try decoder.decode(Message.self, from: Self.message(sent: .text("2026-11-27T10:00:00Z"))).sent == expectedDate)
        #expect(try decoder.decode(Message.self, from: Self.message(sent: .text("2026-11-27T11:00:00.250+01:00"))).sent
            == expectedDate.addingTimeInterval(0.25))
        #expect(try decoder.decode(Message.self, from: Self.message(sent: .integer(1_795_773_600))).sent == expectedDate)
        let bytes = withUnsafeBytes(of: Self.key.uuid) { Array($0) }
        #expect(try decoder.decode(Message.self, from: Self.message(key: .blob(bytes))).key == Self.key)
        #expect(try decoder.decode(Message.self, from: Self.message(score: .integer(3))).score == 3)
        #expect(try decoder.decode(Message.self, from: Self.message(flags: .integer(255))).flags == 255)
    }

    @Test("a value that does not fit throws an error naming its column and what it expected")
    func errorsNameTheColumn() {
        let decoder = RemoteRecordDecoder()
        let cases: [(RemoteRecord, String, RemoteDecodingError.Reason)] = [
            (Self.message(id: .real(1.5)), "id", .notExact(expected: "Int64")),
            (Self.message(id: .text("1")), "id", .typeMismatch(expected: "Int64")),
            (Self.message(id: .null), "id", .typeMismatch(expected: "Int64")),
            (Self.message(score: .integer(9_007_199_254_740_993)), "score", .notExact(expected: "Double")),
            (Self.message(unread: .integer(2)), "unread", .notExact(expected: "Bool (0 or 1)")),
            (Self.message(sent: .text("yesterday")), "sent", .unreadable(expected: "date (ISO 8601)")),
            (Self.message(key: .blob([1, 2, 3])), "key", .unreadable(expected: "UUID (16 bytes)")),
            (Self.message(flags: .integer(256)), "flags", .notExact(expected: "UInt8")),
            (Self.record(["id": .integer(1)]), "sender", .missingColumn),
        ]
        for (record, column, reason) in cases {
            do {
                _ = try decoder.decode(Message.self, from: record)
                Issue.record("\(record) decoded")
            } catch let error as RemoteDecodingError {
                #expect(error.column == column && error.reason == reason, "\(error)")
                #expect(error.description.contains("\"\(column)\""))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("an app's own single-value types (a raw-value enum) decode from their column")
    func ownSingleValueTypes() throws {
        enum Folder: String, Decodable { case inbox, archive }
        struct Row: Decodable { var folder: Folder }
        #expect(try RemoteRecordDecoder().decode(Row.self, from: Self.record(["folder": .text("archive")])).folder == .archive)
        #expect(throws: (any Error).self) { try RemoteRecordDecoder().decode(Row.self, from: Self.record(["folder": .text("spam")])) }
    }
}
