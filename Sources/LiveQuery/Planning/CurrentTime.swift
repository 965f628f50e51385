import Foundation
import GRDB
import LiveQueryCore

/// When SQL reads the clock: CURRENT_TIME, CURRENT_DATE and CURRENT_TIMESTAMP, and SQLite's
/// date and time functions given the time value `'now'` (in any case, as SQLite compares it) —
/// whether the SQL writes it or an argument passes it — or given no time value (`date()`,
/// `strftime('%Y')`), which means `'now'`.
enum CurrentTime {
    static let keywords: Set<String> = ["current_time", "current_date", "current_timestamp"]
    static let dateFunctions: Set<String> = ["date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"]

    /// Whether `tokens`, whose function calls are `calls` (``SQLTokenizer/functionCalls(_:)``),
    /// read the clock when run with `arguments`.
    static func isRead(tokens: [SQLToken], calls: Set<String>, arguments: StatementArguments, _ db: Database) -> Bool {
        if !calls.isDisjoint(with: keywords) { return true }
        guard !calls.isDisjoint(with: dateFunctions) else { return false }
        if callsWithoutTimeValue(tokens) { return true }
        if tokens.contains(where: { $0.kind == .string && isNow($0.text.utf8.dropFirst().dropLast()) }) { return true }
        guard !arguments.isEmpty else { return false }
        guard let values = argumentValues(tokens: tokens, arguments: arguments, db) else {
            return true   // arguments SQLite would not bind here: one of them may be 'now'
        }
        return values.contains { value in
            switch value.storage {
            case let .string(text): isNow(text.utf8)
            case let .blob(data): isNow(data)   // SQLite reads a blob's bytes as text
            default: false
            }
        }
    }

    /// Whether a date function is called without its time value: `date()`, `time()`,
    /// `datetime()`, `julianday()`, `unixepoch()` with no argument, `strftime(format)` with one.
    static func callsWithoutTimeValue(_ tokens: [SQLToken]) -> Bool {
        for (index, token) in tokens.enumerated() where index + 1 < tokens.count && tokens[index + 1].isSymbol && tokens[index + 1].text == "(" {
            guard case .identifier = token.kind else { continue }
            let name = token.text.lowercased()
            guard dateFunctions.contains(name), name != "timediff" else { continue }
            // The arguments: commas at the call's own depth, and whether anything is inside.
            var depth = 0, commas = 0, isEmpty = true
            for inner in tokens[(index + 1)...] {
                if inner.isSymbol && inner.text == "(" { depth += 1 }
                if inner.isSymbol && inner.text == ")" { depth -= 1 }
                if depth == 0 { break }
                if !(depth == 1 && inner.isSymbol && inner.text == "(") { isEmpty = false }
                if depth == 1 && inner.isSymbol && inner.text == "," { commas += 1 }
            }
            let arguments = isEmpty ? 0 : commas + 1
            if arguments < (name == "strftime" ? 2 : 1) { return true }
        }
        return false
    }

    /// Whether `bytes` spell `now`, ASCII letters in any case: SQLite's own comparison.
    static func isNow(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.count == 3 && zip(bytes, "now".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// The values `arguments` give the parameters of `tokens`, read back through SQLite (GRDB
    /// does not expose them): bound to `VALUES (p1), (p2), …`, the same parameters in the same
    /// order, which SQLite numbers and names as it did in the statement they come from. `nil`
    /// when SQLite does not accept them there.
    private static func argumentValues(tokens: [SQLToken], arguments: StatementArguments, _ db: Database) -> [DatabaseValue]? {
        let parameters = tokens.filter { $0.kind == .parameter }
        guard !parameters.isEmpty else { return [] }
        let sql = "VALUES " + parameters.map { "(" + $0.text + ")" }.joined(separator: ", ")
        do {
            return try DatabaseValue.fetchAll(db, sql: sql, arguments: arguments)
        } catch {
            return nil
        }
    }
}
