import GRDB
import GRDBSQLite
import LiveQueryCore

extension SQLToken {
    /// The token as the engine-independent statement analysis reads it: literals as the values
    /// SQLite stores for them, `:name`, `@name` and `$name` by name; a positional parameter, a
    /// hexadecimal or oversized number is `other` (not stated).
    var statementToken: StatementToken {
        switch kind {
        case .identifier(quoted: false) where isKeyword("TRUE"): return .literal(.integer(1))
        case .identifier(quoted: false) where isKeyword("FALSE"): return .literal(.integer(0))
        case let .identifier(quoted): return .word(text, quoted: quoted)
        case .string:
            let inner = text.dropFirst().dropLast()
            return .literal(.text(SQLText(inner.replacingOccurrences(of: "''", with: "'"))))
        case .number:
            if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                return Int64(text).map { .literal(.integer($0)) } ?? .other(text)
            }
            guard !text.lowercased().hasPrefix("0x"), let real = Double(text), real.isFinite else { return .other(text) }
            return .literal(.real(real))
        case .blob:
            guard let bytes = Self.hexBytes(text.dropFirst(2).dropLast()) else { return .other(text) }
            return .literal(.blob(bytes))
        case .parameter:
            guard let first = text.first, first != "?", text.count > 1 else { return .other(text) }
            return .parameter(String(text.dropFirst()))
        case .symbol:
            return .symbol(text)
        }
    }

    private static func hexBytes(_ hex: Substring) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x41...0x46: digit - 0x41 + 10
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }
}

extension TableFacts {
    /// SQLite's facts of table `name` of the main schema (`nil`: no such table, or a view):
    /// each column's affinity (from its declared type) decides which values it stores and
    /// compares without converting them; its declared collation; its default when that is a
    /// literal; and the triggers on the table that are not LiveList's own change log.
    static func read(_ name: String, _ db: Database) throws -> TableFacts? {
        try TableSchema.read(name, db).map { schema throws in try read(schema, db) }
    }

    /// The facts of the table `schema` describes (read already, as a planner has it).
    static func read(_ schema: TableSchema, _ db: Database) throws -> TableFacts {
        var columns: [Column] = []
        for row in try Row.fetchAll(db, sql: "SELECT name, type, dflt_value, hidden FROM pragma_table_xinfo(?)", arguments: [schema.name]) {
            let hidden: Int = row["hidden"] ?? 0
            guard hidden != 1, let column: String = row["name"] else { continue }
            let affinity = Affinity(declaredType: row["type"] ?? "")
            let defaultValue: Column.Default
            if hidden != 0 {
                defaultValue = .unstated
            } else if let written: String = row["dflt_value"] {
                defaultValue = Self.literal(written).map { affinity.stores($0) ? .value($0) : .unstated } ?? .unstated
            } else {
                defaultValue = column == schema.rowidAlias ? .unstated : .value(.null)
            }
            let collation: SortTerm.Collation? = switch TableSchema.declaredCollation(db, table: schema.name, column: column) {
            case .custom: nil
            case let known: known
            }
            columns.append(Column(name: column, storesExactly: affinity.storedExactly, comparesExactly: affinity.comparedExactly,
                                  collation: collation, defaultValue: defaultValue, isGenerated: hidden != 0))
        }
        let triggers = try String.fetchAll(db, sql: """
            SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE AND name NOT LIKE 'livelist\\_log\\_%' ESCAPE '\\'
            UNION ALL SELECT name FROM sqlite_temp_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE AND name NOT LIKE 'livelist\\_%' ESCAPE '\\'
            """, arguments: [schema.name, schema.name])
        return TableFacts(name: schema.name, columns: columns, triggers: triggers, namesIgnoreCase: true)
    }

    /// A default written as a literal: a number, a string, a blob, NULL, TRUE or FALSE.
    private static func literal(_ written: String) -> SQLValue? {
        guard let tokens = SQLTokenizer.tokens(written) else { return nil }
        var parts = tokens.map(\.statementToken)
        if parts.first == .symbol("("), parts.last == .symbol(")") { parts = Array(parts.dropFirst().dropLast()) }
        return StatementToken.literal(parts)
    }
}

/// A column's type affinity (SQLite's rules on its declared type), and which values it keeps
/// and compares as they are.
struct Affinity: Equatable {
    enum Kind { case integer, text, blob, real, numeric }
    var kind: Kind

    init(declaredType: String) {
        let type = declaredType.uppercased()
        kind = if type.contains("INT") { .integer }
            else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { .text }
            else if type.contains("BLOB") || type.isEmpty { .blob }
            else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { .real }
            else { .numeric }
    }

    /// NULL and blobs are never converted; numbers stay numbers in INTEGER and NUMERIC columns
    /// only when they are integers (a real without fraction becomes one), reals in REAL columns;
    /// text stays text in TEXT columns. A column without affinity converts nothing.
    var storedExactly: Set<SQLStorageClass> {
        switch kind {
        case .integer, .numeric: [.null, .blob, .integer]
        case .real: [.null, .blob, .real]
        case .text: [.null, .blob, .text]
        case .blob: Set(SQLStorageClass.allCases)
        }
    }

    /// A value compared with the column is converted when the column has a numeric affinity and
    /// the value is text, or the column has TEXT affinity and the value is a number.
    var comparedExactly: Set<SQLStorageClass> {
        switch kind {
        case .integer, .numeric, .real: [.null, .blob, .integer, .real]
        case .text: [.null, .blob, .text]
        case .blob: Set(SQLStorageClass.allCases)
        }
    }

    func stores(_ value: SQLValue) -> Bool { storedExactly.contains(SQLStorageClass(of: value)) }
}
