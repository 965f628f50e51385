import Foundation
import LiveListWire
import Testing

/// A value read as its storage class, and a `UUID` or a `Date` written and read as databases
/// store them.
@Suite("Wire values, typed")
struct WireValueReadingTests {
    @Test("each storage class reads as its own type, and as no other")
    func storageClasses() {
        #expect(WireValue.integer(9_007_199_254_740_993).integer == 9_007_199_254_740_993)
        #expect(WireValue.real(1).integer == nil && WireValue.integer(1).real == nil)
        #expect(WireValue.real(-0.5).real == -0.5 && WireValue.text("é\u{0}").text == "é\u{0}" && WireValue.blob([0, 255]).blob == [0, 255])
        #expect(WireValue.null.isNull && !WireValue.integer(0).isNull && WireValue.null.text == nil)
    }

    @Test("a UUID in each encoding: 16 bytes, lowercase or uppercase text; each reads back, and they are three different values")
    func uuids() {
        let uuid = UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301") ?? UUID()
        #expect(WireValue.uuid(uuid, as: .bytes) == .blob([0x3F, 0x25, 0x04, 0xE0, 0x4F, 0x89, 0x11, 0xD3, 0x9A, 0x0C, 0x03, 0x05, 0xE8, 0x2C, 0x33, 0x01]))
        #expect(WireValue.uuid(uuid, as: .lowercaseText) == .text("3f2504e0-4f89-11d3-9a0c-0305e82c3301"))
        #expect(WireValue.uuid(uuid, as: .uppercaseText) == .text("3F2504E0-4F89-11D3-9A0C-0305E82C3301"))
        for encoding in [WireValue.UUIDEncoding.bytes, .lowercaseText, .uppercaseText] {
            #expect(WireValue.uuid(uuid, as: encoding).uuid == uuid, "\(encoding)")
        }
        #expect(Set([WireValue.UUIDEncoding.bytes, .lowercaseText, .uppercaseText].map { WireValue.uuid(uuid, as: $0) }).count == 3)
        #expect(WireValue.blob([1, 2, 3]).uuid == nil && WireValue.text("not a uuid").uuid == nil && WireValue.integer(1).uuid == nil)
    }

    @Test("a Date in each encoding reads back to the millisecond or the second; SQLite's text sorts as the dates do")
    func dates() throws {
        let dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_300_000.123), Date(timeIntervalSince1970: -86_400.5),
                     Date(timeIntervalSince1970: 951_782_400.25), Date(timeIntervalSince1970: 253_402_300_799.999)]
        #expect(WireValue.date(dates[0], as: .sqliteText) == .text("1970-01-01 00:00:00.000"))
        #expect(WireValue.date(dates[1], as: .iso8601) == .text("2025-11-28T03:20:00.123Z"))
        #expect(WireValue.date(dates[2], as: .sqliteText) == .text("1969-12-30 23:59:59.500"))
        #expect(WireValue.date(dates[3], as: .sqliteText) == .text("2000-02-29 00:00:00.250"), "a leap day")
        #expect(WireValue.date(dates[4], as: .sqliteText) == .text("9999-12-31 23:59:59.999"))
        #expect(WireValue.date(dates[2], as: .wholeSecondsSince1970) == .integer(-86_401), "rounded down")
        #expect(WireValue.date(dates[1], as: .secondsSince1970) == .real(dates[1].timeIntervalSince1970))
        for date in dates {
            for encoding in [WireValue.DateEncoding.sqliteText, .iso8601, .secondsSince1970] {
                let read = try #require(WireValue.date(date, as: encoding).date, "\(date) as \(encoding)")
                #expect(abs(read.timeIntervalSince(date)) < 0.001, "\(date) as \(encoding)")
            }
        }
        let texts = dates.sorted().map { WireValue.date($0, as: .sqliteText).text ?? "" }
        #expect(texts == texts.sorted(), "text in byte order is date order")
    }

    @Test("a date reads from ISO 8601 with T or a space, a fraction or none, a zone or none (UTC), or a bare day; other values are not dates")
    func readingDates() {
        let noon = Date(timeIntervalSince1970: 1_764_331_200)
        for text in ["2025-11-28T12:00:00Z", "2025-11-28 12:00:00", "2025-11-28 12:00:00.000", "2025-11-28T13:00:00+01:00"] {
            #expect(WireValue.text(text).date == noon, "\(text)")
        }
        #expect(WireValue.text("2025-11-28").date == Date(timeIntervalSince1970: 1_764_288_000))
        #expect(WireValue.integer(1_764_331_200).date == noon && WireValue.real(1_764_331_200).date == noon)
        #expect(WireValue.text("yesterday").date == nil && WireValue.null.date == nil && WireValue.blob([1]).date == nil)
    }
}
