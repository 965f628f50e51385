/// A token of PostgreSQL's SQL, with the range of the text it came from: enough lexical structure
/// to find a SELECT's clauses, its tables and its sort terms, and to hand every other part back
/// to the server as written.
///
/// Lexical rules followed: PostgreSQL's documentation, "Lexical Structure" (identifiers fold to
/// lower case unless quoted; `''` and `E'…'` strings, dollar quotes, nested block comments,
/// `$n` parameters, multi-character operators). `package`: the PostgreSQL SQL fuzz target
/// (`Sources/Fuzz/postgres-sql`) reads SQL through it.
package struct PostgresToken: Equatable, Sendable {
    package enum Kind: Equatable, Sendable {
        /// An identifier or key word; `name` is folded to lower case unless quoted.
        case identifier(name: String, quoted: Bool)
        case string
        case number
        /// `$n`.
        case parameter(Int)
        /// An operator (`=`, `<>`, `::`, `||`…).
        case op(String)
        /// `(`, `)`, `,`, `.`, `;`, `[`, `]`, `:`.
        case punctuation(Character)
    }

    package var kind: Kind
    /// Offsets in the text's UTF-8 bytes.
    package var range: Range<Int>

    /// Whether the token is the unquoted key word `word` (lower case).
    func isKeyword(_ word: String) -> Bool {
        if case let .identifier(name, false) = kind { return name == word }
        return false
    }

    var isPunctuation: Character? {
        if case let .punctuation(character) = kind { return character }
        return nil
    }
}

/// Text PostgreSQL's lexer would refuse (an unterminated string or comment, a stray character).
package struct PostgresSQLUnreadable: Error, Equatable, Sendable {
    package var offset: Int
}

package enum PostgresSQLTokenizer {
    /// The tokens of `sql`, without whitespace and comments.
    /// - Complexity: O(n) for n bytes.
    package static func tokens(_ sql: String) throws(PostgresSQLUnreadable) -> [PostgresToken] {
        let bytes = Array(sql.utf8)
        var tokens: [PostgresToken] = []
        var index = 0
        func at(_ offset: Int) -> UInt8 { offset < bytes.count ? bytes[offset] : 0 }
        while index < bytes.count {
            let start = index
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C:
                index += 1
            case UInt8(ascii: "-") where at(index + 1) == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where at(index + 1) == UInt8(ascii: "*"):
                index = try blockCommentEnd(bytes, from: index)
            case UInt8(ascii: "'"):
                index = try quoted(bytes, from: index, backslashes: false)
                tokens.append(PostgresToken(kind: .string, range: start..<index))
            case UInt8(ascii: "\""):
                let end = try quoted(bytes, from: index, backslashes: false)
                let name = String(decoding: bytes[(start + 1)..<(end - 1)], as: UTF8.self).replacingOccurrences(of: "\"\"", with: "\"")
                guard !name.isEmpty else { throw PostgresSQLUnreadable(offset: start) }
                index = end
                tokens.append(PostgresToken(kind: .identifier(name: name, quoted: true), range: start..<index))
            case UInt8(ascii: "$") where isDigit(at(index + 1)):
                index += 1
                while isDigit(at(index)) { index += 1 }
                guard let number = Int(String(decoding: bytes[(start + 1)..<index], as: UTF8.self)) else { throw PostgresSQLUnreadable(offset: start) }
                tokens.append(PostgresToken(kind: .parameter(number), range: start..<index))
            case UInt8(ascii: "$"):
                index = try dollarQuoteEnd(bytes, from: index)
                tokens.append(PostgresToken(kind: .string, range: start..<index))
            case _ where isDigit(byte) || (byte == UInt8(ascii: ".") && isDigit(at(index + 1))):
                index += 1
                while isDigit(at(index)) || at(index) == UInt8(ascii: ".") || at(index) == UInt8(ascii: "_") || isLetter(at(index))
                    || ((at(index) == UInt8(ascii: "+") || at(index) == UInt8(ascii: "-")) && (at(index - 1) | 0x20) == UInt8(ascii: "e")) {
                    index += 1
                }
                tokens.append(PostgresToken(kind: .number, range: start..<index))
            case _ where isIdentifierStart(byte):
                // E'…', B'…', X'…', N'…' strings; U&'…' and U&"…" are refused (rare, and their
                // escapes would need reading).
                let lower = byte | 0x20
                if at(index + 1) == UInt8(ascii: "'"), [UInt8(ascii: "e"), UInt8(ascii: "b"), UInt8(ascii: "x"), UInt8(ascii: "n")].contains(lower) {
                    index = try quoted(bytes, from: index + 1, backslashes: lower == UInt8(ascii: "e"))
                    tokens.append(PostgresToken(kind: .string, range: start..<index))
                    continue
                }
                if lower == UInt8(ascii: "u"), at(index + 1) == UInt8(ascii: "&") { throw PostgresSQLUnreadable(offset: start) }
                index += 1
                while isIdentifierPart(at(index)) { index += 1 }
                let name = String(decoding: bytes[start..<index].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
                tokens.append(PostgresToken(kind: .identifier(name: name, quoted: false), range: start..<index))
            case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "["), UInt8(ascii: "]"):
                index += 1
                tokens.append(PostgresToken(kind: .punctuation(Character(UnicodeScalar(byte))), range: start..<index))
            case UInt8(ascii: "."):
                index += 1
                tokens.append(PostgresToken(kind: .punctuation("."), range: start..<index))
            case UInt8(ascii: ":") where at(index + 1) == UInt8(ascii: ":"):
                index += 2
                tokens.append(PostgresToken(kind: .op("::"), range: start..<index))
            case UInt8(ascii: ":"):
                index += 1
                tokens.append(PostgresToken(kind: .punctuation(":"), range: start..<index))
            case _ where isOperator(byte):
                while isOperator(at(index)) {
                    // A comment starts inside an operator's characters: the operator ends there.
                    if (at(index) == UInt8(ascii: "-") && at(index + 1) == UInt8(ascii: "-"))
                        || (at(index) == UInt8(ascii: "/") && at(index + 1) == UInt8(ascii: "*")) { break }
                    index += 1
                }
                tokens.append(PostgresToken(kind: .op(String(decoding: bytes[start..<index], as: UTF8.self)), range: start..<index))
            default:
                throw PostgresSQLUnreadable(offset: start)
            }
        }
        return tokens
    }

    /// The end of the block comment starting at `start` (`/*`; they nest).
    private static func blockCommentEnd(_ bytes: [UInt8], from start: Int) throws(PostgresSQLUnreadable) -> Int {
        func at(_ offset: Int) -> UInt8 { offset < bytes.count ? bytes[offset] : 0 }
        var index = start
        var depth = 0
        repeat {
            if at(index) == UInt8(ascii: "/"), at(index + 1) == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if at(index) == UInt8(ascii: "*"), at(index + 1) == UInt8(ascii: "/") {
                depth -= 1
                index += 2
            } else if index >= bytes.count {
                throw PostgresSQLUnreadable(offset: start)
            } else {
                index += 1
            }
        } while depth > 0
        return index
    }

    /// The end of the dollar-quoted string starting at `start`: `$tag$ … $tag$`.
    private static func dollarQuoteEnd(_ bytes: [UInt8], from start: Int) throws(PostgresSQLUnreadable) -> Int {
        var tagEnd = start + 1
        while tagEnd < bytes.count, isIdentifierPart(bytes[tagEnd]), bytes[tagEnd] != UInt8(ascii: "$") { tagEnd += 1 }
        guard tagEnd < bytes.count, bytes[tagEnd] == UInt8(ascii: "$") else { throw PostgresSQLUnreadable(offset: start) }
        let tag = Array(bytes[start...tagEnd])
        var search = tagEnd + 1
        while search + tag.count <= bytes.count, !bytes[search..<(search + tag.count)].elementsEqual(tag) { search += 1 }
        guard search + tag.count <= bytes.count else { throw PostgresSQLUnreadable(offset: start) }
        return search + tag.count
    }

    /// The end of the quoted text starting at `start` (its quote character doubled inside it).
    private static func quoted(_ bytes: [UInt8], from start: Int, backslashes: Bool) throws(PostgresSQLUnreadable) -> Int {
        let quote = bytes[start]
        var index = start + 1
        while index < bytes.count {
            if backslashes, bytes[index] == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if bytes[index] == quote {
                if index + 1 < bytes.count, bytes[index + 1] == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        throw PostgresSQLUnreadable(offset: start)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    private static func isIdentifierStart(_ byte: UInt8) -> Bool { isLetter(byte) || byte == UInt8(ascii: "_") || byte >= 0x80 }
    private static func isIdentifierPart(_ byte: UInt8) -> Bool { isIdentifierStart(byte) || isDigit(byte) || byte == UInt8(ascii: "$") }
    private static func isOperator(_ byte: UInt8) -> Bool {
        "+-*/<>=~!@#%^&|`?".utf8.contains(byte)
    }
}
