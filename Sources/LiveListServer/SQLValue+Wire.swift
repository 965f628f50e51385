import LiveListWire
import LiveQueryCore

extension SQLValue {
    /// The value as the protocol carries it. Text is sent as its string; text that is not valid
    /// UTF-8 (SQLite does not check) is sent with U+FFFD in place of the bad bytes.
    var wire: WireValue {
        switch self {
        case .null: .null
        case let .integer(value): .integer(value)
        case let .real(value): .real(value)
        case let .text(text): .text(text.string)
        case let .blob(bytes): .blob(bytes)
        }
    }
}

extension WireValue {
    /// The value as SQLite binds it (and the PostgreSQL engine, through its request's values).
    package var sql: SQLValue {
        switch self {
        case .null: .null
        case let .integer(value): .integer(value)
        case let .real(value): .real(value)
        case let .text(text): .text(SQLText(text))
        case let .blob(bytes): .blob(bytes)
        }
    }
}

extension WireOrder {
    /// A query's order as a `reset` states it; `nil` when a term compares text under a collation
    /// the protocol does not name.
    init?(_ order: ResultOrder) {
        var terms: [WireOrderTerm] = []
        for term in order.terms {
            let collation: WireOrderTerm.Collation
            switch term.collation {
            case .binary: collation = .binary
            case .nocase: collation = .nocase
            case .rtrim: collation = .rtrim
            case .custom: return nil
            }
            terms.append(WireOrderTerm(column: term.column, descending: term.descending, nullsFirst: term.nullsFirst, collation: collation))
        }
        self.init(terms: terms)
    }
}
