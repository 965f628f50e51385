import GRDB

/// A value as SQLite stores it — the storage class is kept (an integer stored in a TEXT column
/// stays TEXT), because ORDER BY compares values as stored.
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value of `databaseValue`, storage class preserved.
    public init(_ databaseValue: DatabaseValue) {
        switch databaseValue.storage {
        case .null: self = .null
        case let .int64(value): self = .integer(value)
        case let .double(value): self = .real(value)
        case let .string(value): self = .text(value)
        case let .blob(data): self = .blob(Array(data))
        }
    }

    /// Whether the value is NULL.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case let .integer(value): String(value)
        case let .real(value): String(value)
        case let .text(value): "'\(value)'"
        case let .blob(bytes): "X'" + bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "'"
        }
    }
}

extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
