import Foundation
import GRDB

/// When SQL reads the clock: CURRENT_TIME, CURRENT_DATE and CURRENT_TIMESTAMP, and SQLite's
/// date and time functions given the time value `'now'` (in any case, as SQLite compares it),
/// whether the SQL writes it or an argument passes it.
enum _CurrentTime {
    static let keywords: Set<String> = ["current_time", "current_date", "current_timestamp"]
    static let dateFunctions: Set<String> = ["date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"]

    /// Whether `tokens`, whose function calls are `calls` (``_SQLTokenizer/functionCalls(_:)``),
    /// read the clock when run with `arguments`.
    static func isRead(tokens: [_SQLToken], calls: Set<String>, arguments: StatementArguments, _ db: Database) -> Bool {
        if !calls.isDisjoint(with: keywords) { return true }
        guard !calls.isDisjoint(with: dateFunctions) else { return false }
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

    /// Whether `bytes` spell `now`, ASCII letters in any case: SQLite's own comparison.
    static func isNow(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.count == 3 && zip(bytes, "now".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// The values `arguments` give the parameters of `tokens`, read back through SQLite (GRDB
    /// does not expose them): bound to `VALUES (p1), (p2), …`, the same parameters in the same
    /// order, which SQLite numbers and names as it did in the statement they come from. `nil`
    /// when SQLite does not accept them there.
    private static func argumentValues(tokens: [_SQLToken], arguments: StatementArguments, _ db: Database) -> [DatabaseValue]? {
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
