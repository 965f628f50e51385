#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Typed reads of a value, and the values of a `UUID` or a `Date` as a database stores them.
///
/// A value keeps the storage class the database gave it, so reading one asks for a class: each
/// property answers `nil` for a value of another one (`integer` of a `.real(1)` is `nil`). A
/// `UUID` and a `Date` are not storage classes: how they are stored is the database's and the
/// app's choice, so making their value names that choice (see ``UUIDEncoding`` and
/// ``DateEncoding``), and reading them accepts every usual form.
///
/// ```swift
/// import Foundation
/// import LiveListWire
///
/// /// A track's identity as a list over SQLite (GRDB: 16 bytes) or PostgreSQL (`uuid`: text) sends it.
/// func wireTrackID(_ id: UUID, overPostgreSQL: Bool) -> WireValue {
///     .uuid(id, as: overPostgreSQL ? .lowercaseText : .bytes)
/// }
///
/// func wireTrackAdded(_ values: [String: WireValue]) -> (id: UUID, added: Date)? {
///     guard let id = values["uuid"]?.uuid, let added = values["added"]?.date else { return nil }
///     return (id, added)
/// }
/// ```
extension WireValue {
    /// Whether the value is NULL.
    public var isNull: Bool { self == .null }

    /// The integer, when the value is an INTEGER.
    public var integer: Int64? {
        guard case let .integer(value) = self else { return nil }
        return value
    }

    /// The number, when the value is a REAL.
    public var real: Double? {
        guard case let .real(value) = self else { return nil }
        return value
    }

    /// The string, when the value is a TEXT.
    public var text: String? {
        guard case let .text(value) = self else { return nil }
        return value
    }

    /// The bytes, when the value is a BLOB.
    public var blob: [UInt8]? {
        guard case let .blob(value) = self else { return nil }
        return value
    }
}

extension WireValue {
    /// How a `UUID` is stored, hence sent: a value made with another encoding is another value —
    /// a pending row with it would not be the server's row.
    public enum UUIDEncoding: Sendable, Hashable {
        /// Its 16 bytes, as a BLOB: how GRDB stores a `UUID` in SQLite.
        case bytes
        /// Its text in lowercase with hyphens (`3f2504e0-4f89-11d3-9a0c-0305e82c3301`): how the
        /// server sends a PostgreSQL `uuid`.
        case lowercaseText
        /// Its text in uppercase with hyphens, as `UUID.uuidString` writes it: for a TEXT column
        /// an app filled with `uuidString`.
        case uppercaseText
    }

    /// `uuid` as a database stores it with `encoding`: `.uuid(id, as: .bytes)` for a GRDB
    /// record's `UUID` in SQLite, `.uuid(id, as: .lowercaseText)` for a PostgreSQL `uuid`.
    public static func uuid(_ uuid: UUID, as encoding: UUIDEncoding) -> WireValue {
        switch encoding {
        case .bytes:
            let bytes = uuid.uuid
            return .blob([bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5, bytes.6, bytes.7,
                          bytes.8, bytes.9, bytes.10, bytes.11, bytes.12, bytes.13, bytes.14, bytes.15])
        case .lowercaseText: return .text(uuid.uuidString.lowercased())
        case .uppercaseText: return .text(uuid.uuidString)
        }
    }

    /// The `UUID` the value holds: a BLOB of 16 bytes, or a TEXT that reads as one (hyphens, in
    /// either case). `nil` otherwise.
    public var uuid: UUID? {
        switch self {
        case let .blob(bytes):
            guard bytes.count == 16 else { return nil }
            return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        case let .text(text):
            return UUID(uuidString: text)
        default:
            return nil
        }
    }
}

extension WireValue {
    /// How a `Date` is stored, hence sent. Over SQLite it is the app's choice (GRDB's is
    /// ``sqliteText``); a PostgreSQL `timestamp` is sent in PostgreSQL's own text, which ``date``
    /// reads, and its order is not stated to clients, so any encoding shows a pending row's date.
    public enum DateEncoding: Sendable, Hashable {
        /// TEXT as GRDB stores a `Date` in SQLite: `yyyy-MM-dd HH:mm:ss.SSS` in UTC (to the
        /// millisecond, rounded down), which sorts as the dates do.
        case sqliteText
        /// TEXT in ISO 8601, in UTC, to the millisecond: `2026-11-27T10:00:00.000Z`.
        case iso8601
        /// Seconds since 1970 as a REAL (`timeIntervalSince1970`).
        case secondsSince1970
        /// Whole seconds since 1970 as an INTEGER (rounded down), for a column of Unix times.
        case wholeSecondsSince1970
    }

    /// `date` as a database stores it with `encoding`. Text forms write years 1 to 9999.
    public static func date(_ date: Date, as encoding: DateEncoding) -> WireValue {
        let seconds = date.timeIntervalSince1970
        switch encoding {
        case .secondsSince1970:
            return .real(seconds)
        case .wholeSecondsSince1970:
            return .integer(Int64(seconds.rounded(.down)))
        case .sqliteText, .iso8601:
            // To the microsecond first: a `Date` holds its time from 2001, so the seconds since
            // 1970 of a whole millisecond may fall a hair below it.
            let microseconds = Int64((seconds * 1_000_000).rounded())
            let milliseconds = microseconds >= 0 ? microseconds / 1_000 : (microseconds - 999) / 1_000
            let text = CivilTime(millisecondsSince1970: milliseconds).text(separator: encoding == .iso8601 ? "T" : " ")
            return .text(encoding == .iso8601 ? text + "Z" : text)
        }
    }

    /// The `Date` the value holds: an INTEGER or REAL of seconds since 1970, or a TEXT in ISO 8601
    /// with `T` or a space between day and time, optional fractional seconds, and `Z`, an offset
    /// or nothing (UTC) — SQLite's `2026-11-27 10:00:00.000` included — or a bare day
    /// (`2026-11-27`, its midnight in UTC). `nil` otherwise.
    public var date: Date? {
        switch self {
        case let .integer(seconds): return Date(timeIntervalSince1970: Double(seconds))
        case let .real(seconds): return Date(timeIntervalSince1970: seconds)
        case let .text(text): return Self.date(text)
        case .null, .blob: return nil
        }
    }

    /// `text` read as ``date`` reads a TEXT.
    static func date(_ text: String) -> Date? {
        var normalized = String(text.map { $0 == " " ? "T" : $0 })
        if normalized.count == 10 { normalized += "T00:00:00" }
        let hasZone = normalized.hasSuffix("Z") || normalized.dropFirst(19).contains("+") || normalized.dropFirst(19).contains("-")
        if !hasZone { normalized += "Z" }
        return try? iso8601.parse(normalized)
    }

    /// Reads fractional seconds when present, and whole seconds too. A value style, made once.
    private static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

/// A UTC time to the millisecond as its calendar day and time of day (the proleptic Gregorian
/// calendar, from days since 1970 by Howard Hinnant's `civil_from_days`).
private struct CivilTime {
    var year: Int64, month: Int64, day: Int64
    var hour: Int64, minute: Int64, second: Int64, millisecond: Int64

    init(millisecondsSince1970 value: Int64) {
        let perDay: Int64 = 86_400_000
        var days = value / perDay
        var rest = value % perDay
        if rest < 0 {
            rest += perDay
            days -= 1
        }
        millisecond = rest % 1_000
        second = rest / 1_000 % 60
        minute = rest / 60_000 % 60
        hour = rest / 3_600_000
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// `yyyy-MM-dd HH:mm:ss.SSS`, with `separator` between day and time.
    func text(separator: String) -> String {
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + separator
            + padded(hour, 2) + ":" + padded(minute, 2) + ":" + padded(second, 2) + "." + padded(millisecond, 3)
    }
}
