import Foundation
import GRDB
import GRDBSQLite
import LiveQueryCore

/// What a live query must know about a table: its columns, how to reach its rowid, its primary
/// key and its unique indexes (rows a REPLACE can delete without telling anyone).
struct TableSchema: Sendable {
    struct Column: Sendable {
        var name: String
        /// Position in the primary key (1-based), 0 when not part of it.
        var primaryKeyPosition: Int
    }

    /// A unique index: what makes two rows conflict.
    struct UniqueIndex: Sendable {
        enum Term: Sendable {
            /// A column, compared under `collation`.
            case column(String, collation: String)
            /// An expression over the table's columns, as written in `CREATE INDEX`.
            case expression(String)
        }

        var name: String
        var terms: [Term]
        /// The WHERE clause of a partial index, as written.
        var predicate: String?
    }

    var name: String
    var columns: [Column]
    var isWithoutRowid: Bool
    /// `rowid`, `oid` or `_rowid_`, whichever no column hides; `nil` without a rowid.
    var rowidName: String?
    /// The INTEGER PRIMARY KEY column that aliases the rowid, if any.
    var rowidAlias: String?
    var uniqueIndexes: [UniqueIndex]

    var primaryKey: [String] {
        columns.filter { $0.primaryKeyPosition > 0 }.sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
    }

    /// Whether `column` (as declared) holds a different value in every row: the single-column
    /// primary key, the rowid alias, or the only column of a unique index without a WHERE.
    func isUnique(_ column: String) -> Bool {
        primaryKey == [column] || column == rowidAlias || uniqueIndexes.contains { index in
            guard index.predicate == nil, index.terms.count == 1, case let .column(name, _) = index.terms[0] else { return false }
            return name == column
        }
    }

    /// The schema of `table` in the main database, or `nil` when there is no such table.
    static func read(_ table: String, _ db: Database) throws -> TableSchema? {
        let list = try Row.fetchOne(db, sql: "SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE", arguments: [table])
        guard let list, let name: String = list["name"], (list["type"] as String?) == "table" else { return nil }
        let isWithoutRowid: Bool = list["wr"] ?? false
        var columns: [Column] = []
        for row in try Row.fetchAll(db, sql: "SELECT name, pk, hidden FROM pragma_table_xinfo(?)", arguments: [name]) {
            let hidden: Int = row["hidden"] ?? 0
            guard hidden != 1 else { continue }
            columns.append(Column(name: row["name"] ?? "", primaryKeyPosition: row["pk"] ?? 0))
        }
        let lowered = Set(columns.map { $0.name.lowercased() })
        let rowidName = isWithoutRowid ? nil : ["rowid", "_rowid_", "oid"].first { !lowered.contains($0) }
        var rowidAlias: String?
        let keyColumns = columns.filter { $0.primaryKeyPosition > 0 }
        if !isWithoutRowid, keyColumns.count == 1 {
            // An INTEGER PRIMARY KEY aliases the rowid exactly when SQLite made no index for it.
            let hasIndex = try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM pragma_index_list(?) WHERE origin = 'pk'", arguments: [name]) ?? false
            if !hasIndex { rowidAlias = keyColumns[0].name }
        }
        var uniqueIndexes: [UniqueIndex] = []
        for index in try Row.fetchAll(db, sql: "SELECT name, \"unique\", partial FROM pragma_index_list(?)", arguments: [name]) {
            guard (index["unique"] as Int?) == 1, let indexName: String = index["name"] else { continue }
            let isPartial = (index["partial"] as Int?) == 1
            var terms: [UniqueIndex.Term] = []
            var hasExpression = false
            for info in try Row.fetchAll(db, sql: "SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", arguments: [indexName]) {
                let cid: Int = info["cid"] ?? -2
                if cid >= 0, let column: String = info["name"] {
                    terms.append(.column(column, collation: info["coll"] ?? "BINARY"))
                } else {
                    hasExpression = true
                    terms.append(.expression(""))
                }
            }
            var predicate: String?
            if hasExpression || isPartial {
                // Expressions and predicates are only in the index's SQL.
                guard let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [indexName]),
                      let parsed = parseIndex(sql) else {
                    throw LiveQueryError.invalidRequest(.unreadableUniqueIndex(index: indexName, table: name))
                }
                if hasExpression { terms = parsed.terms.map { .expression($0) } }
                predicate = parsed.predicate
            }
            uniqueIndexes.append(UniqueIndex(name: indexName, terms: terms, predicate: predicate))
        }
        return TableSchema(name: name, columns: columns, isWithoutRowid: isWithoutRowid, rowidName: rowidName,
                            rowidAlias: rowidAlias, uniqueIndexes: uniqueIndexes)
    }

    /// The indexed terms and the WHERE clause of a `CREATE [UNIQUE] INDEX … ON t(…) [WHERE …]`.
    static func parseIndex(_ sql: String) -> (terms: [String], predicate: String?)? {
        guard let tokens = SQLTokenizer.tokens(sql), let open = tokens.firstIndex(where: { $0.text == "(" }) else { return nil }
        let bytes = Array(sql.utf8)
        var depth = 0, termStart = tokens[open].range.upperBound
        var terms: [String] = []
        var close: Int?
        var lastSignificant = open
        for index in (open + 1)..<tokens.count {
            let token = tokens[index]
            if token.text == "(" && token.isSymbol { depth += 1 }
            if token.text == ")" && token.isSymbol {
                if depth == 0 {
                    terms.append(String(decoding: bytes[termStart..<Self.end(of: tokens, from: open, to: lastSignificant)], as: UTF8.self))
                    close = index
                    break
                }
                depth -= 1
            }
            if token.text == "," && token.isSymbol && depth == 0 {
                terms.append(String(decoding: bytes[termStart..<Self.end(of: tokens, from: open, to: lastSignificant)], as: UTF8.self))
                termStart = token.range.upperBound
                lastSignificant = index
                continue
            }
            // ASC and DESC at the end of a term order the index; they do not change equality.
            if !(depth == 0 && (token.isKeyword("ASC") || token.isKeyword("DESC"))) { lastSignificant = index }
        }
        guard let close else { return nil }
        var predicate: String?
        if let whereIndex = tokens[(close + 1)...].firstIndex(where: { $0.isKeyword("WHERE") }), whereIndex + 1 < tokens.count, let last = tokens.last {
            // Up to the last token: SQLite keeps a trailing comment in the schema, and a `--` one
            // would swallow what LiveList writes after the predicate.
            predicate = String(decoding: bytes[tokens[whereIndex + 1].range.lowerBound..<last.range.upperBound], as: UTF8.self)
        }
        return (terms.map { $0.trimmingCharacters(in: .whitespaces) }, predicate)
    }

    private static func end(of tokens: [SQLToken], from open: Int, to last: Int) -> Int {
        tokens[last].range.upperBound
    }

    /// The collation a column was declared with (BINARY when none), as SQLite reports it.
    static func declaredCollation(_ db: Database, table: String, column: String) -> SortTerm.Collation {
        var collationName: UnsafePointer<CChar>?
        let status = sqlite3_table_column_metadata(db.sqliteConnection, "main", table, column, nil, &collationName, nil, nil, nil)
        guard status == SQLITE_OK, let collationName else { return .binary }
        switch String(cString: collationName).uppercased() {
        case "BINARY": return .binary
        case "NOCASE": return .nocase
        case "RTRIM": return .rtrim
        case let other: return .custom(other)
        }
    }
}
