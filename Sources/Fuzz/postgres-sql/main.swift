import FuzzSupport
import LiveQueryPostgres

// A published query's SQL as the PostgreSQL engine reads it before asking the catalog: its tokens
// (`_PostgresSQLTokenizer`: quoted identifiers, `E'…'` and dollar-quoted strings, nested comments,
// `$n`, operators) and the SELECT's parts (`_PostgresSelectParser`). What needs the catalog is
// PostgreSQL's to refuse. An input is the SQL text (bytes that are not UTF-8 read as U+FFFD).

FuzzTarget.main { bytes in
    let sql = String(decoding: bytes, as: UTF8.self)
    let count = sql.utf8.count
    do throws(_PostgresSQLUnreadable) {
        // Tokens in order, none empty, none overlapping, all within the text.
        var end = 0
        for token in try _PostgresSQLTokenizer.tokens(sql) {
            precondition(token.range.lowerBound >= end && token.range.upperBound <= count && !token.range.isEmpty, "\(token) after \(end)")
            if case let .parameter(number) = token.kind { precondition(number >= 0) }
            end = token.range.upperBound
        }
    } catch {
        precondition((0...count).contains(error.offset), "unreadable at \(error.offset) of \(count)")
    }
    _ = _PostgresSelectParser.parse(sql)
    // With the trailing semicolons a client's SQL may end with.
    _ = _PostgresSelectParser.parse(sql + ";;")
}
