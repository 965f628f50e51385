import LiveQueryCore
import PostgresNIO

/// One statement that re-reads the rows of several queries that share their SELECT and differ in
/// their arguments: a row of `VALUES` per query (its number, its arguments, the identities it
/// re-reads), each joined LATERAL to the query's re-read with its parameters taken from that row.
/// Each query's rows are exactly what its own re-read returns: the parameters have the same types
/// (the arguments bound the same way), and the re-read is the same text.
///
/// A value and functions of values, tested without a database (`RereadBatchTests`).
enum _RereadBatch {
    /// `rereadSQL` (whose `$1`…`$arguments` are the query's arguments and `$arguments + 1` the
    /// identities) with its parameters read from the batch's row `livelist_b` (`a1`… and `ids`);
    /// `nil` when it names other parameters or cannot be read.
    static func template(_ rereadSQL: String, arguments: Int) -> String? {
        guard let tokens = try? _PostgresSQLTokenizer.tokens(rereadSQL) else { return nil }
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

    /// The statement for `rows` queries of `arguments` arguments each: bound as each query's
    /// arguments and its identities (text[]), query after query. Its first column numbers the
    /// query (from 0); the query's own columns follow.
    static func sql(template: String, arguments: Int, rows: Int) -> String {
        let width = arguments + 1
        let values = (0..<rows).map { row in
            "(" + ([String(row)] + (1...width).map { "$\(row * width + $0)" }).joined(separator: ", ") + ")"
        }
        let columns = ["n"] + (0..<arguments).map { "a\($0 + 1)" } + ["ids"]
        return "SELECT livelist_b.n, livelist_r.* FROM (VALUES " + values.joined(separator: ", ") + ") AS livelist_b("
            + columns.joined(separator: ", ") + ") CROSS JOIN LATERAL (" + template + ") AS livelist_r"
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
