import FuzzSupport
import LiveQueryPostgres

/// A table as the analysis reads one: integers, text under a collation clients reproduce and one
/// they do not, bytes, a generated column, a default it cannot state.
let table = TableFacts(name: "item", columns: [
    .init(name: "id", storesExactly: [.null, .integer], comparesExactly: [.null, .integer], collation: .binary, defaultValue: .unstated),
    .init(name: "title", storesExactly: [.null, .text], comparesExactly: [.null, .text], collation: .binary, defaultValue: .value(.text("x"))),
    .init(name: "name", storesExactly: [.null, .text], comparesExactly: [.null, .text], collation: nil, defaultValue: .value(.null)),
    .init(name: "data", storesExactly: [.null, .blob], comparesExactly: [.null, .blob], collation: .binary, defaultValue: .value(.null)),
    .init(name: "total", storesExactly: [.null], comparesExactly: [.null, .integer], collation: .binary, defaultValue: .unstated, isGenerated: true),
], triggers: [], namesIgnoreCase: false)

// A published query's SQL as the PostgreSQL engine reads it before asking the catalog: its tokens
// (`PostgresSQLTokenizer`: quoted identifiers, `E'…'` and dollar-quoted strings, nested comments,
// `$n`, operators), the SELECT's parts (`PostgresSelectParser`), and the text as a mutation's
// statement and a filter (`StatementAnalysis`). What needs the catalog is PostgreSQL's to refuse. An input is the SQL text (bytes that are not UTF-8 read as U+FFFD).

FuzzTarget.main { bytes in
    let sql = String(decoding: bytes, as: UTF8.self)
    let count = sql.utf8.count
    do throws(PostgresSQLUnreadable) {
        // Tokens in order, none empty, none overlapping, all within the text.
        var end = 0
        for token in try PostgresSQLTokenizer.tokens(sql) {
            precondition(token.range.lowerBound >= end && token.range.upperBound <= count && !token.range.isEmpty, "\(token) after \(end)")
            if case let .parameter(number) = token.kind { precondition(number >= 0) }
            end = token.range.upperBound
        }
    } catch {
        precondition((0...count).contains(error.offset), "unreadable at \(error.offset) of \(count)")
    }
    _ = PostgresSelectParser.parse(sql)
    // With the trailing semicolons a client's SQL may end with.
    _ = PostgresSelectParser.parse(sql + ";;")
    // As a mutation's statement and as a WHERE, over a table of every kind of column: an effect
    // stated, or a typed reason, never a crash.
    if let tokens = PostgresToken.statementTokens(sql) {
        let effects = StatementAnalysis.effects(of: [tokens], parameters: ["id": [.integer], "t": [.text], "any": Set(SQLStorageClass.allCases)]) { _ in table }
        if case let .unstated(reason) = effects { precondition(!reason.description.isEmpty) }
        _ = StatementAnalysis.filter(tokens, table: table, names: ["item", "i"]) { $0 == "id" ? .integer(1) : nil }
    }
}
