import LiveQueryCore

/// Splits SQL into tokens the way SQLite's tokenizer does, for what LiveList must know about a
/// statement without compiling it itself: which functions a filter calls, where the clauses of a
/// SELECT begin. Comments are dropped; quoted identifiers and literals are single tokens.
struct SQLToken: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// A bare or quoted identifier, or a keyword (`text` holds it unquoted).
        case identifier(quoted: Bool)
        case string
        case number
        case blob
        /// `?`, `?NNN`, `:name`, `@name`, `$name`.
        case parameter
        /// Punctuation and operators: `(`, `)`, `,`, `.`, `=`, `||`, …
        case symbol
    }

    var kind: Kind
    /// The identifier unquoted, or the token's source text.
    var text: String
    /// Where the token starts and ends in the source's UTF-8.
    var range: Range<Int>

    /// Whether this is the bare word `keyword` (case-insensitive).
    func isKeyword(_ keyword: String) -> Bool {
        kind == .identifier(quoted: false) && text.caseInsensitiveCompare(keyword) == .orderedSame
    }

    var isSymbol: Bool { kind == .symbol }
}

enum SQLTokenizer {
    /// The tokens of `sql`; `nil` when a literal or quoted identifier is not closed.
    static func tokens(_ sql: String) -> [SQLToken]? {
        let bytes = Array(sql.utf8)
        var tokens: [SQLToken] = []
        var index = 0
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        func isIdentifierByte(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x24 || byte >= 0x80
        }
        while index < bytes.count {
            let byte = bytes[index]
            let start = index
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C:
                index += 1
            case 0x2D where index + 1 < bytes.count && bytes[index + 1] == 0x2D:   // -- comment
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            case 0x2F where index + 1 < bytes.count && bytes[index + 1] == 0x2A:   // /* comment */
                index += 2
                while index + 1 < bytes.count && !(bytes[index] == 0x2A && bytes[index + 1] == 0x2F) { index += 1 }
                index = min(bytes.count, index + 2)
            case 0x27:   // 'string'
                guard let end = closing(0x27, in: bytes, from: index + 1) else { return nil }
                index = end + 1
                tokens.append(SQLToken(kind: .string, text: text(start..<index), range: start..<index))
            case 0x22, 0x60:   // "identifier", `identifier`
                guard let end = closing(byte, in: bytes, from: index + 1) else { return nil }
                index = end + 1
                let inner = text(start + 1..<end).replacingOccurrences(of: byte == 0x22 ? "\"\"" : "``", with: byte == 0x22 ? "\"" : "`")
                tokens.append(SQLToken(kind: .identifier(quoted: true), text: inner, range: start..<index))
            case 0x5B:   // [identifier]
                guard let end = bytes[(index + 1)...].firstIndex(of: 0x5D) else { return nil }
                index = end + 1
                tokens.append(SQLToken(kind: .identifier(quoted: true), text: text(start + 1..<end), range: start..<index))
            case 0x78 where index + 1 < bytes.count && bytes[index + 1] == 0x27, 0x58 where index + 1 < bytes.count && bytes[index + 1] == 0x27:   // x'blob'
                guard let end = closing(0x27, in: bytes, from: index + 2) else { return nil }
                index = end + 1
                tokens.append(SQLToken(kind: .blob, text: text(start..<index), range: start..<index))
            case 0x3F, 0x3A, 0x40, 0x24:   // ? :name @name $name
                index += 1
                while index < bytes.count && isIdentifierByte(bytes[index]) { index += 1 }
                tokens.append(SQLToken(kind: .parameter, text: text(start..<index), range: start..<index))
            case 0x30...0x39:
                index += 1
                while index < bytes.count && (isIdentifierByte(bytes[index]) || bytes[index] == 0x2E
                    || ((bytes[index] == 0x2B || bytes[index] == 0x2D) && (bytes[index - 1] | 0x20) == 0x65)) { index += 1 }
                tokens.append(SQLToken(kind: .number, text: text(start..<index), range: start..<index))
            case 0x2E where index + 1 < bytes.count && bytes[index + 1] >= 0x30 && bytes[index + 1] <= 0x39:
                index += 1
                while index < bytes.count && (isIdentifierByte(bytes[index]) || bytes[index] == 0x2E) { index += 1 }
                tokens.append(SQLToken(kind: .number, text: text(start..<index), range: start..<index))
            default:
                if isIdentifierByte(byte) {
                    while index < bytes.count && isIdentifierByte(bytes[index]) { index += 1 }
                    tokens.append(SQLToken(kind: .identifier(quoted: false), text: text(start..<index), range: start..<index))
                } else {
                    // Two-byte operators first.
                    let pair = index + 1 < bytes.count ? text(index..<index + 2) : ""
                    let length = ["||", "<=", ">=", "==", "!=", "<>", "<<", ">>", "->"].contains(pair) ? (pair == "->" && index + 2 < bytes.count && bytes[index + 2] == 0x3E ? 3 : 2) : 1
                    index += length
                    tokens.append(SQLToken(kind: .symbol, text: text(start..<index), range: start..<index))
                }
            }
        }
        return tokens
    }

    /// The index of the quote that closes a literal opened before `start` (a doubled quote is
    /// part of the literal).
    private static func closing(_ quote: UInt8, in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if bytes[index] == quote {
                if index + 1 < bytes.count && bytes[index + 1] == quote { index += 2; continue }
                return index
            }
            index += 1
        }
        return nil
    }

    /// The names of the functions `sql` calls: identifiers followed by `(`, lower-cased — quoted
    /// ones too, as SQLite calls `"random"()` — plus the current-time keywords (bare: quoted, they
    /// are names).
    static func functionCalls(_ tokens: [SQLToken]) -> Set<String> {
        var names = Set<String>()
        for (index, token) in tokens.enumerated() {
            guard case let .identifier(quoted) = token.kind else { continue }
            let lower = token.text.lowercased()
            if !quoted && ["current_time", "current_date", "current_timestamp"].contains(lower) {
                names.insert(lower)
            } else if index + 1 < tokens.count, tokens[index + 1].isSymbol, tokens[index + 1].text == "(" {
                names.insert(lower)
            }
        }
        return names
    }
}
