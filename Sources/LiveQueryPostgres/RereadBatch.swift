import LiveQueryCore
import PostgresNIO

/// One statement that re-reads the rows of several queries that share their SELECT and differ in
/// their arguments: a row of `VALUES` per query (its number, its arguments, the identities it
/// re-reads), each joined LATERAL to the query's re-read with its parameters taken from that row.
/// Each query's rows are exactly what its own re-read returns: the parameters have the same types
/// (the arguments bound the same way), and the re-read is the same text.
///
/// A value and functions of values, tested without a database (`RereadBatchTests`).
enum RereadBatch {
    /// `rereadSQL` (whose `$1`…`$arguments` are the query's arguments and `$arguments + 1` the
    /// identities) with its parameters read from the batch's row `livelist_b` (`a1`… and `ids`);
    /// `nil` when it names other parameters or cannot be read.
    static func template(_ rereadSQL: String, arguments: Int) -> String? {
        guard let tokens = try? PostgresSQLTokenizer.tokens(rereadSQL) else { return nil }
        let bytes = Array(rereadSQL.utf8)
        var text = ""
        var last = 0
        for token in tokens {
            guard case let .parameter(number) = token.kind else { continue }
            guard (1...(arguments + 1)).contains(number) else { return nil }
            text += String(decoding: bytes[last..<token.range.lowerBound], as: UTF8.self)
            text += number == arguments + 1 ? "livelist_b.ids" : "livelist_b.a\(number)"
            last = token.range.upperBound
        }
        return text + String(decoding: bytes[last...], as: UTF8.self)
    }

    /// The statement for `rows` queries whose arguments are of the SQL types `argumentTypes`:
    /// bound as each query's arguments and its identities (text[]), query after query, each
    /// parameter cast to its type (a prepared statement's parameters take the types its text
    /// gives them). Its first column numbers the query (from 0); the query's own columns follow.
    static func sql(template: String, argumentTypes: [String], rows: Int) -> String {
        let types = argumentTypes + ["text[]"]
        let values = (0..<rows).map { row in
            "(" + ([String(row)] + types.enumerated().map { "CAST($\(row * types.count + $0.offset + 1) AS \($0.element))" })
                .joined(separator: ", ") + ")"
        }
        let columns = ["n"] + (0..<argumentTypes.count).map { "a\($0 + 1)" } + ["ids"]
        return "SELECT livelist_b.n, livelist_r.* FROM (VALUES " + values.joined(separator: ", ") + ") AS livelist_b("
            + columns.joined(separator: ", ") + ") CROSS JOIN LATERAL (" + template + ") AS livelist_r"
    }

    /// The most queries one batch statement reads: 256, fewer when each has many arguments, so
    /// that a statement's parameters stay far below the 65,535 the protocol carries (postgres-nio
    /// refuses more) and each size's prepared plan stays small. A power of two, so the rows of a
    /// full batch need no padding.
    static func maximumRows(arguments: Int) -> Int {
        var rows = 256
        while rows > 1, rows * (arguments + 1) > 32_768 { rows /= 2 }
        return rows
    }

    /// The rows a batch of `members` queries is sent with: the next power of two, so that a
    /// published query has a few batch statements to prepare, not one per number of members.
    /// The rows past the members re-read no identities.
    static func rows(for members: Int) -> Int {
        var rows = 1
        while rows < members { rows *= 2 }
        return rows
    }

    /// The kinds of the arguments, which queries of one batch share (their `VALUES` columns have one
    /// type each); `nil` with a NULL (untyped: PostgreSQL infers its type from where it is used).
    static func kinds(of values: [SQLValue]) -> String? {
        var kinds = ""
        for value in values {
            switch value {
            case .null: return nil
            case .integer: kinds += "i"
            case .real: kinds += "r"
            case .text: kinds += "t"
            case .blob: kinds += "b"
            }
        }
        return kinds
    }
}
