/// Reads the statement forms whose effects can be stated — a single-row INSERT … VALUES, an
/// UPDATE … SET … WHERE, a DELETE … WHERE, and a WHERE of comparisons joined by AND — from an
/// engine's tokens. Anything else is an error naming what was found.
struct StatementParser {
    /// A name as written.
    struct Name: Hashable {
        var text: String
        var quoted: Bool
    }

    /// A value in a statement: one stated (a literal, a parameter) or an expression.
    enum Expression: Hashable {
        case operand(RowOperand)
        case other
    }

    /// A condition as written: a column (with its qualifier) tested against an operand.
    struct Condition: Hashable {
        var qualifier: Name?
        var column: Name
        var test: RowCondition.Test
        var operand: RowOperand?
    }

    enum Statement {
        case insert(table: Name, columns: [Name]?, values: [Expression])
        case update(table: Name, alias: Name?, set: [(Name, Expression)], conditions: [Condition])
        case delete(table: Name, alias: Name?, conditions: [Condition])
    }

    struct Failure: Error {
        var detail: String
    }

    private let tokens: [StatementToken]
    private var index = 0

    init(_ tokens: [StatementToken]) {
        // A trailing semicolon ends the statement.
        var tokens = tokens
        while tokens.last?.isSymbol(";") == true { tokens.removeLast() }
        self.tokens = tokens
    }

    private var current: StatementToken? { index < tokens.count ? tokens[index] : nil }

    private func failure(_ expected: String) -> Failure {
        Failure(detail: "expected \(expected), found \(current?.display ?? "the end")")
    }

    private mutating func keyword(_ word: String) -> Bool {
        guard current?.isKeyword(word) == true else { return false }
        index += 1
        return true
    }

    private mutating func expect(keyword word: String) throws(Failure) {
        guard keyword(word) else { throw failure(word) }
    }

    private mutating func symbol(_ text: String) -> Bool {
        guard current?.isSymbol(text) == true else { return false }
        index += 1
        return true
    }

    private mutating func expect(symbol text: String) throws(Failure) {
        guard symbol(text) else { throw failure("\"\(text)\"") }
    }

    private static let reserved: Set<String> = ["and", "or", "not", "where", "set", "values", "from", "is", "null", "returning", "in", "like", "between"]

    private mutating func name() throws(Failure) -> Name {
        guard case let .word(text, quoted)? = current, quoted || !Self.reserved.contains(text.asciiLowercased) else { throw failure("a name") }
        index += 1
        return Name(text: text, quoted: quoted)
    }

    /// `name` or `schema.name`: the schema must be the main one (`main`, `public`), left out.
    private mutating func tableName() throws(Failure) -> Name {
        let first = try name()
        guard symbol(".") else { return first }
        guard ["main", "public"].contains(first.text.asciiLowercased) else { throw Failure(detail: "a table of schema \(first.text)") }
        return try name()
    }

    /// The whole statement; an error when it is not one of the stated forms.
    mutating func statement() throws(Failure) -> Statement {
        let statement: Statement
        if keyword("INSERT") {
            statement = try insert()
        } else if keyword("UPDATE") {
            statement = try update()
        } else if keyword("DELETE") {
            statement = try delete()
        } else {
            throw failure("INSERT, UPDATE or DELETE")
        }
        guard current == nil else { throw failure("the end of the statement") }
        return statement
    }

    private mutating func insert() throws(Failure) -> Statement {
        if current?.isKeyword("OR") == true { throw Failure(detail: "INSERT OR … may replace or skip a row") }
        try expect(keyword: "INTO")
        let table = try tableName()
        var columns: [Name]?
        if symbol("(") {
            var names = [try name()]
            while symbol(",") { names.append(try name()) }
            try expect(symbol: ")")
            columns = names
        }
        guard keyword("VALUES") else { throw failure("VALUES (one row)") }
        try expect(symbol: "(")
        var values = [try expression()]
        while symbol(",") { values.append(try expression()) }
        try expect(symbol: ")")
        if current?.isSymbol(",") == true { throw Failure(detail: "an INSERT of several rows") }
        if current?.isKeyword("ON") == true { throw Failure(detail: "ON CONFLICT may update another row") }
        if keyword("RETURNING") { skipToEnd() }
        if let columns, columns.count != values.count { throw Failure(detail: "\(columns.count) columns and \(values.count) values") }
        return .insert(table: table, columns: columns, values: values)
    }

    private mutating func update() throws(Failure) -> Statement {
        if current?.isKeyword("OR") == true { throw Failure(detail: "UPDATE OR … may replace or skip a row") }
        let table = try tableName()
        let alias = try alias()
        try expect(keyword: "SET")
        var set: [(Name, Expression)] = []
        repeat {
            let column = try name()
            try expect(symbol: "=")
            set.append((column, try expression()))
        } while symbol(",")
        if current?.isKeyword("FROM") == true { throw Failure(detail: "UPDATE … FROM reads other tables") }
        let conditions = try whereClause()
        return .update(table: table, alias: alias, set: set, conditions: conditions)
    }

    private mutating func delete() throws(Failure) -> Statement {
        try expect(keyword: "FROM")
        let table = try tableName()
        let alias = try alias()
        return .delete(table: table, alias: alias, conditions: try whereClause())
    }

    private mutating func alias() throws(Failure) -> Name? {
        if keyword("AS") { return try name() }
        if case let .word(text, quoted)? = current, quoted || !["set", "where"].contains(text.asciiLowercased) {
            return try name()
        }
        return nil
    }

    private mutating func whereClause() throws(Failure) -> [Condition] {
        guard keyword("WHERE") else { throw failure("WHERE") }
        let conditions = try conjunction()
        if keyword("RETURNING") { skipToEnd() }
        return conditions
    }

    private mutating func skipToEnd() { index = tokens.count }

    /// Conditions joined by AND, to the end of the tokens or a RETURNING.
    mutating func conjunction() throws(Failure) -> [Condition] {
        var conditions = [try condition()]
        while keyword("AND") { conditions.append(try condition()) }
        guard current == nil || current?.isKeyword("RETURNING") == true else { throw failure("AND or the end of the condition") }
        return conditions
    }

    private static let tests: [String: RowCondition.Test] = [
        "=": .equal, "==": .equal, "<>": .notEqual, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]

    private mutating func condition() throws(Failure) -> Condition {
        if case .word? = current {
            let (qualifier, column) = try columnReference()
            if keyword("IS") {
                let negated = keyword("NOT")
                try expect(keyword: "NULL")
                return Condition(qualifier: qualifier, column: column, test: negated ? .notNull : .isNull, operand: nil)
            }
            if keyword("ISNULL") { return Condition(qualifier: qualifier, column: column, test: .isNull, operand: nil) }
            if keyword("NOTNULL") { return Condition(qualifier: qualifier, column: column, test: .notNull, operand: nil) }
            if keyword("NOT"), keyword("NULL") { return Condition(qualifier: qualifier, column: column, test: .notNull, operand: nil) }
            let test = try comparison()
            guard case let .operand(operand) = try expression() else { throw Failure(detail: "\(column.text) is compared with an expression") }
            return Condition(qualifier: qualifier, column: column, test: test, operand: operand)
        }
        guard case let .operand(operand) = try expression() else { throw failure("a comparison of a column") }
        let test = try comparison()
        let (qualifier, column) = try columnReference()
        return Condition(qualifier: qualifier, column: column, test: test.swapped, operand: operand)
    }

    private mutating func comparison() throws(Failure) -> RowCondition.Test {
        guard case let .symbol(text)? = current, let test = Self.tests[text] else { throw failure("a comparison (=, <>, <, <=, >, >=, IS NULL)") }
        index += 1
        return test
    }

    private mutating func columnReference() throws(Failure) -> (Name?, Name) {
        let first = try name()
        guard symbol(".") else { return (nil, first) }
        return (first, try name())
    }

    /// A literal, a parameter, or (`.other`) any expression up to the next `,` or `)` at its depth.
    private mutating func expression() throws(Failure) -> Expression {
        let start = index
        if case let .parameter(name)? = current, isEndOfExpression(at: index + 1) {
            index += 1
            return .operand(.parameter(name))
        }
        for length in [1, 2] where index + length <= tokens.count && isEndOfExpression(at: index + length) {
            if let value = StatementToken.literal(tokens[index..<index + length]) {
                index += length
                return .operand(.value(value))
            }
        }
        var depth = 0
        while let token = current {
            if token.isSymbol("(") { depth += 1 }
            if token.isSymbol(")") {
                if depth == 0 { break }
                depth -= 1
            }
            if depth == 0, token.isSymbol(",") || token.isKeyword("AND") || token.isKeyword("OR") || token.isKeyword("WHERE") || token.isKeyword("RETURNING")
                || token.isKeyword("FROM") || token.isKeyword("ON") { break }
            index += 1
        }
        guard index > start else { throw failure("a value") }
        return .other
    }

    private func token(at position: Int) -> StatementToken? { position < tokens.count ? tokens[position] : nil }

    private func isEndOfExpression(at position: Int) -> Bool {
        guard let token = token(at: position) else { return true }
        return token.isSymbol(",") || token.isSymbol(")") || token.isKeyword("AND") || token.isKeyword("OR") || token.isKeyword("WHERE")
            || token.isKeyword("RETURNING") || token.isKeyword("FROM") || token.isKeyword("ON") || token.isSymbol(";")
            || tests(token)
    }

    private func tests(_ token: StatementToken) -> Bool {
        if case let .symbol(text) = token { return Self.tests[text] != nil }
        return false
    }
}
