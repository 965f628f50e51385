/// A token of a statement, as an engine's tokenizer reads it, for what the engine-independent
/// analysis of mutations and filters needs: words (unquoted words folded as the engine folds
/// them), parameters by name, literals as values, symbols.
public enum StatementToken: Hashable, Sendable {
    /// An identifier or key word; `quoted` when it was written in quotes.
    case word(String, quoted: Bool)
    /// A named parameter (`:name`), by its name.
    case parameter(String)
    /// A literal value: a number, a string, a blob.
    case literal(SQLValue)
    /// Punctuation or an operator: `(`, `,`, `.`, `=`, `<=`, …
    case symbol(String)
    /// Anything the analysis does not read (a positional parameter, a cast, an engine's own
    /// syntax): a statement or condition holding one is not stated.
    case other(String)

    func isKeyword(_ keyword: String) -> Bool {
        if case let .word(word, false) = self { return word.asciiLowercased == keyword.asciiLowercased }
        return false
    }

    func isSymbol(_ symbol: String) -> Bool {
        if case let .symbol(text) = self { return text == symbol }
        return false
    }

    var display: String {
        switch self {
        case let .word(word, quoted): quoted ? "\"\(word)\"" : word
        case let .parameter(name): ":" + name
        case let .literal(value): value.sqlLiteral
        case let .symbol(text), let .other(text): text
        }
    }
}

extension StatementToken {
    /// The value `tokens` write, when they are one literal: a number, a string, bytes, `NULL`, or
    /// `-` before a number; `nil` for anything else (an expression, a cast, an integer that
    /// negated would overflow).
    package static func literal(_ tokens: some Collection<StatementToken>) -> SQLValue? {
        let tokens = Array(tokens)
        switch (tokens.count, tokens.first) {
        case let (1, .literal(value)?): return value
        case let (1, word?) where word.isKeyword("NULL"): return .null
        case (2, .symbol("-")?):
            switch tokens[1] {
            case let .literal(.integer(number)) where number != .min: return .integer(-number)
            case let .literal(.real(number)): return .real(-number)
            default: return nil
            }
        default: return nil
        }
    }
}

extension String {
    /// The text with ASCII letters A–Z as a–z and nothing else folded: how SQLite compares
    /// names and key words.
    var asciiLowercased: String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}
