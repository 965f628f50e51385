import LiveQueryCore
import PostgresNIO

extension PostgresToken {
    /// The tokens of `sql` as the engine-independent statement analysis reads them: `:name`
    /// placeholders and `$n` parameters by name (`"$1"`), plain `'…'` strings and numbers as
    /// values, `true` and `false` as 1 and 0 (as booleans are sent); a cast, an `E'…'` or
    /// dollar-quoted string is `other` (not stated). `nil` when PostgreSQL's lexer would refuse it.
    package static func statementTokens(_ sql: String) -> [StatementToken]? {
        guard let tokens = try? PostgresSQLTokenizer.tokens(sql) else { return nil }
        let bytes = Array(sql.utf8)
        var result: [StatementToken] = []
        var index = 0
        while index < tokens.count {
            let token = tokens[index]
            let text = String(decoding: bytes[token.range], as: UTF8.self)
            switch token.kind {
            case .punctuation(":") where index + 1 < tokens.count:
                if case let .identifier(name, false) = tokens[index + 1].kind, tokens[index + 1].range.lowerBound == token.range.upperBound {
                    result.append(.parameter(name))
                    index += 2
                    continue
                }
                result.append(.symbol(":"))
            case let .identifier(name, quoted):
                result.append(!quoted && name == "true" ? .literal(.integer(1)) : !quoted && name == "false" ? .literal(.integer(0))
                              : .word(name, quoted: quoted))
            case .string:
                guard text.hasPrefix("'"), text.hasSuffix("'"), text.count >= 2 else {
                    result.append(.other(text))
                    break
                }
                result.append(.literal(.text(SQLText(String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")))))
            case .number:
                if let integer = Int64(text) {
                    result.append(.literal(.integer(integer)))
                } else if text.allSatisfy({ $0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "+" || $0 == "-" }), let real = Double(text), real.isFinite {
                    result.append(.literal(.real(real)))
                } else {
                    result.append(.other(text))
                }
            case let .parameter(number): result.append(.parameter("$\(number)"))
            case let .op(op): result.append(op == "::" ? .other(op) : .symbol(op))
            case let .punctuation(character): result.append(.symbol(String(character)))
            }
            index += 1
        }
        return result
    }
}

extension PostgresTable {
    /// The facts the statement analysis needs (``LiveQueryCore/TableFacts``): each column's
    /// type decides which values it stores and compares as sent — integers (`int2`, `int4`,
    /// `int8`, and `bool` as 0 and 1), text (`text`, `varchar`), bytes (`bytea`); other types
    /// state nothing but NULL — its collation how text compares (byte order only: C, POSIX,
    /// `ucs_basic`), its default when that is a literal; and the table's triggers.
    func statementFacts(_ session: PostgresSession) async throws(PostgresLiveQueryError) -> TableFacts {
        var binds = PostgresBindings()
        binds.append(Int64(oid))
        var defaults: [String: TableFacts.Column.Default] = [:]
        for row in try await session.rows("""
            SELECT a.attname::text, pg_get_expr(d.adbin, d.adrelid), a.attidentity::text <> ''
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
            """, binds) {
            let (name, expression, isIdentity) = try PostgresPlan.decode(row, as: (String, String?, Bool).self)
            defaults[name] = isIdentity ? .unstated : expression.map { Self.literalDefault($0).map { .value($0) } ?? .unstated } ?? .value(.null)
        }
        var triggers: [String] = []
        for row in try await session.rows("SELECT tgname::text FROM pg_trigger WHERE tgrelid = $1::int8::oid AND NOT tgisinternal", binds) {
            triggers.append(try PostgresPlan.decode(row, as: String.self))
        }
        let ordered = columns.values.sorted { $0.attnum < $1.attnum }
        return TableFacts(name: name, columns: ordered.map { column in
            let classes = Self.valueClasses(of: column)
            var defaultValue = defaults[column.name] ?? .unstated
            if case let .value(value) = defaultValue, !classes.contains(SQLStorageClass(of: value)) { defaultValue = .unstated }
            return TableFacts.Column(name: column.name, storesExactly: classes, comparesExactly: classes,
                                     collation: classes.contains(.text) && !PostgresPlanner<SQLValue>.comparesByBytes(column) ? nil : .binary,
                                     defaultValue: defaultValue, isGenerated: column.isGenerated)
        }, triggers: triggers, namesIgnoreCase: false)
    }

    private static func valueClasses(of column: Column) -> Set<SQLStorageClass> {
        switch column.typeOID {
        case 20, 21, 23, 16: [.null, .integer]   // int8, int2, int4, bool
        case 25, 1043: [.null, .text]            // text, varchar
        case 17: [.null, .blob]                  // bytea
        default: [.null]
        }
    }

    /// A default that is a literal, its cast left out (`'inbox'::text`, `0`, `-1`, `false`, `NULL::text`).
    static func literalDefault(_ expression: String) -> SQLValue? {
        guard var tokens = PostgresToken.statementTokens(expression) else { return nil }
        if let cast = tokens.firstIndex(of: .other("::")) { tokens.removeSubrange(cast...) }
        if tokens.first == .symbol("("), tokens.last == .symbol(")") { tokens = Array(tokens.dropFirst().dropLast()) }
        return StatementToken.literal(tokens)
    }
}
