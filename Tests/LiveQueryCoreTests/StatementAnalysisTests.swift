import Testing
import LiveQueryCore

/// What the engine-independent analysis states of mutations' statements and queries' filters,
/// from tokens and table facts alone: each stated form, and each reason it states nothing.
struct StatementAnalysisTests {
    /// A table as SQLite describes one: `id` INTEGER, `folder` TEXT, `day` INTEGER, `name`
    /// TEXT COLLATE NOCASE, `made` with a default it cannot state, `total` generated.
    static let message = TableFacts(name: "message", columns: [
        .init(name: "id", storesExactly: [.null, .integer, .blob], comparesExactly: [.null, .integer, .real, .blob], collation: .binary,
              defaultValue: .unstated),
        .init(name: "folder", storesExactly: [.null, .text, .blob], comparesExactly: [.null, .text, .blob], collation: .binary,
              defaultValue: .value(.text("inbox"))),
        .init(name: "day", storesExactly: [.null, .integer, .blob], comparesExactly: [.null, .integer, .real, .blob], collation: .binary,
              defaultValue: .value(.null)),
        .init(name: "name", storesExactly: [.null, .text, .blob], comparesExactly: [.null, .text, .blob], collation: .nocase,
              defaultValue: .value(.null)),
        .init(name: "made", storesExactly: [.null, .integer, .blob], comparesExactly: [.null, .integer, .real, .blob], collation: .binary,
              defaultValue: .unstated),
        .init(name: "total", storesExactly: [], comparesExactly: [.null, .integer, .real, .blob], collation: .binary,
              defaultValue: .unstated, isGenerated: true),
    ], triggers: [], namesIgnoreCase: true)

    static let parameters: [String: Set<SQLStorageClass>] = ["id": [.integer], "folder": [.text], "day": [.integer], "n": [.text],
                                                        "any": Set(SQLStorageClass.allCases), "maybe": [.integer, .null]]

    /// A tiny tokenizer for the tests' SQL: words, `:name`, integers, 'strings', symbols.
    static func tokens(_ sql: String) -> [StatementToken] {
        var tokens: [StatementToken] = []
        var characters = Array(sql)[...]
        while let first = characters.first {
            if first == " " {
                characters.removeFirst()
            } else if first == "'" {
                characters.removeFirst()
                let end = characters.firstIndex(of: "'") ?? characters.endIndex
                tokens.append(.literal(.text(SQLText(String(characters[..<end])))))
                characters = characters[min(end + 1, characters.endIndex)...]
            } else if first == ":" {
                characters.removeFirst()
                let name = characters.prefix { $0.isLetter }
                tokens.append(.parameter(String(name)))
                characters.removeFirst(name.count)
            } else if first.isNumber {
                let digits = characters.prefix { $0.isNumber }
                tokens.append(.literal(.integer(Int64(String(digits)) ?? 0)))
                characters.removeFirst(digits.count)
            } else if first.isLetter || first == "\"" {
                let quoted = first == "\""
                if quoted { characters.removeFirst() }
                let word = characters.prefix { $0.isLetter || $0 == "_" }
                tokens.append(.word(String(word), quoted: quoted))
                characters.removeFirst(word.count)
                if quoted { characters.removeFirst() }
            } else {
                let pair = String(characters.prefix(2))
                let symbol = ["<=", ">=", "<>", "!="].contains(pair) ? pair : String(first)
                tokens.append(.symbol(symbol))
                characters.removeFirst(symbol.count)
            }
        }
        return tokens
    }

    static func effects(_ statements: String...) -> MutationEffects {
        StatementAnalysis.effects(of: statements.map(tokens), parameters: parameters) { $0.lowercased() == "message" ? message : nil }
    }

    @Test("an INSERT states every column: the values given, the defaults it can state, the others unstated")
    func insert() {
        #expect(Self.effects("INSERT INTO message (id, folder, day) VALUES (:id, 'work', :maybe)") == .stated([
            .insert(table: "message", values: ["id": .parameter("id"), "folder": .value(.text("work")), "day": .parameter("maybe"),
                                               "name": .value(.null), "made": RowOperand?.none, "total": RowOperand?.none]),
        ]))
        // A text argument into an INTEGER column would be converted: its value is not stated.
        #expect(Self.effects("INSERT INTO message (id, day) VALUES (:id, :n)") == .stated([
            .insert(table: "message", values: ["id": .parameter("id"), "folder": .value(.text("inbox")), "day": RowOperand?.none,
                                               "name": .value(.null), "made": RowOperand?.none, "total": RowOperand?.none]),
        ]))
    }

    @Test("an UPDATE states its conditions and the values it sets; an expression is a value not stated")
    func update() {
        #expect(Self.effects("UPDATE message SET folder = :folder, made = made + 1 WHERE id = :id AND 3 < day") == .stated([
            .update(table: "message", conditions: [RowCondition(column: "id", test: .equal, operand: .parameter("id")),
                                                   RowCondition(column: "day", test: .greater, operand: .value(.integer(3)))],
                    set: ["folder": .parameter("folder"), "made": RowOperand?.none]),
        ]))
        #expect(Self.effects("DELETE FROM message AS m WHERE m.id = :id AND m.name IS NOT NULL") == .stated([
            .delete(table: "message", conditions: [RowCondition(column: "id", test: .equal, operand: .parameter("id")),
                                                   RowCondition(column: "name", test: .notNull, collation: .nocase)]),
        ]))
    }

    @Test("what cannot be stated says why", arguments: [
        ("INSERT OR REPLACE INTO message (id) VALUES (:id)", "INSERT OR"),
        ("INSERT INTO message (id) VALUES (:id), (:day)", "several rows"),
        ("INSERT INTO message (id) SELECT id FROM message", "VALUES"),
        ("UPDATE message SET folder = 'a' WHERE id = :id OR day = 1", "AND or the end"),
        ("UPDATE message SET folder = 'a' WHERE id IN (1, 2)", "comparison"),
        ("UPDATE message SET folder = 'a' WHERE day = :n", "converts one side"),
        ("UPDATE message SET folder = 'a' WHERE day = :nope", "no parameter"),
        ("DELETE FROM message WHERE other.id = :id", "not a column of message"),
        ("DELETE FROM elsewhere WHERE id = :id", "no table elsewhere"),
        ("UPDATE message SET total = 1 WHERE id = :id", "generated"),
        ("SELECT 1", "INSERT, UPDATE or DELETE"),
    ])
    func unstated(sql: String, reason: String) {
        guard case let .unstated(why) = Self.effects(sql) else {
            Issue.record("\(sql) was stated")
            return
        }
        #expect(why.description.contains(reason), "\(sql): \(why)")
    }

    @Test("a trigger on the table states nothing")
    func trigger() {
        var facts = Self.message
        facts.triggers = ["audit"]
        let effects = StatementAnalysis.effects(of: [Self.tokens("DELETE FROM message WHERE id = :id")], parameters: Self.parameters) { _ in facts }
        #expect(effects == .unstated(.trigger(statement: 0, table: "message", trigger: "audit")))
    }

    @Test("a filter binds its parameters and keeps the column's collation; a comparison that converts is refused")
    func filter() {
        let names: Set<String> = ["message", "m"]
        let bound = StatementAnalysis.filter(Self.tokens("m.folder = :folder AND name >= 'b' AND day IS NULL"), table: Self.message, names: names) {
            $0 == "folder" ? .text("work") : nil
        }
        #expect(bound == .success([
            RowCondition(column: "folder", test: .equal, operand: .value(.text("work"))),
            RowCondition(column: "name", test: .greaterOrEqual, operand: .value(.text("b")), collation: .nocase),
            RowCondition(column: "day", test: .isNull),
        ]))
        let converting = StatementAnalysis.filter(Self.tokens("day = :folder"), table: Self.message, names: names) { _ in .text("3") }
        guard case .failure(.filter) = converting else {
            Issue.record("a text compared with an INTEGER column was stated: \(converting)")
            return
        }
        let unbound = StatementAnalysis.filter(Self.tokens("day = :missing"), table: Self.message, names: names) { _ in nil }
        #expect(unbound == .failure(.filter(detail: "no value for :missing")))
    }
}
