/// States what mutations' statements and queries' filters do, exactly, from an engine's tokens and
/// its ``TableFacts`` — or says why it cannot. Pure: the engine reads the tokens and the facts,
/// this decides.
public enum StatementAnalysis {
    /// The table `tokens` (one statement) changes, when it is one of the stated forms: for the
    /// engine to read its facts before ``effects(of:parameters:facts:)``.
    public static func table(of tokens: [StatementToken]) -> String? {
        var parser = StatementParser(tokens)
        guard let statement = try? parser.statement() else { return nil }   // Not a stated form: effects(of:) says why.
        switch statement {
        case let .insert(table, _, _), let .update(table, _, _, _), let .delete(table, _, _): return table.text
        }
    }

    /// What a mutation's statements (each as its tokens) do, with `parameters` the classes of
    /// values each parameter may take, and `facts` the facts of a table by name (`nil`: no such
    /// table).
    /// - Complexity: O(t + c) per statement of t tokens over a table of c columns.
    public static func effects(of statements: [[StatementToken]], parameters: [String: Set<SQLStorageClass>],
                               facts: (String) -> TableFacts?) -> MutationEffects {
        var effects: [StatementEffect] = []
        for (number, tokens) in statements.enumerated() {
            do throws(UnstatedEffect) {
                effects.append(try effect(of: tokens, number: number, parameters: parameters, facts: facts))
            } catch {
                return .unstated(error)
            }
        }
        return .stated(effects)
    }

    /// The conditions of a query's WHERE (its tokens, without the key word) over `table`, named
    /// in the query by one of `names` (its name, its alias), with the query's `arguments` bound.
    /// - Complexity: O(t + c) for t tokens over a table of c columns.
    public static func filter(_ tokens: [StatementToken], table: TableFacts, names: Set<String>,
                              arguments: (String) -> SQLValue?) -> Result<[RowCondition], UnstatedEffect> {
        guard !tokens.isEmpty else { return .success([]) }
        var parser = StatementParser(tokens)
        let written: [StatementParser.Condition]
        do {
            written = try parser.conjunction()
        } catch {
            return .failure(.filter(detail: error.detail))
        }
        var conditions: [RowCondition] = []
        for condition in written {
            guard condition.qualifier.map({ qualifier in names.contains { table.matches(qualifier, $0) } }) ?? true,
                  let column = table.column(condition.column.text) else {
                return .failure(.filter(detail: "\(condition.column.text) is not a column of \(table.name)"))
            }
            var stated = RowCondition(column: column.name, test: condition.test, collation: column.collation ?? .binary)
            if let operand = condition.operand {
                let value: SQLValue
                switch operand {
                case let .value(literal): value = literal
                case let .parameter(name):
                    guard let bound = arguments(name) else { return .failure(.filter(detail: "no value for :\(name)")) }
                    value = bound
                }
                let valueClass = SQLStorageClass(of: value)
                guard valueClass == .null || column.comparesExactly.contains(valueClass) else {
                    return .failure(.filter(detail: "\(column.name) compared with \(value) converts one side"))
                }
                guard valueClass != .text || column.collation != nil else {
                    return .failure(.filter(detail: "\(column.name) compares text under a collation clients cannot reproduce"))
                }
                stated.operand = .value(value)
            }
            conditions.append(stated)
        }
        return .success(conditions)
    }

    private static func effect(of tokens: [StatementToken], number: Int, parameters: [String: Set<SQLStorageClass>],
                               facts: (String) -> TableFacts?) throws(UnstatedEffect) -> StatementEffect {
        var parser = StatementParser(tokens)
        let statement: StatementParser.Statement
        do {
            statement = try parser.statement()
        } catch {
            throw .form(statement: number, detail: error.detail)
        }
        let context = StatementContext(number: number, parameters: parameters)
        switch statement {
        case let .insert(name, columns, values):
            let table = try context.table(name, facts)
            return .insert(table: table.name, values: try context.inserted(columns: columns, values: values, in: table))
        case let .update(name, alias, set, written):
            let table = try context.table(name, facts)
            let names = [name.text] + (alias.map { [$0.text] } ?? [])
            var values: [String: RowOperand?] = [:]
            for (columnName, expression) in set {
                let column = try context.column(columnName, of: table)
                guard !column.isGenerated else { throw .form(statement: number, detail: "it sets \(column.name), a generated column") }
                values[column.name] = try context.stored(expression, in: column)
            }
            return .update(table: table.name, conditions: try context.conditions(written, of: table, names: names), set: values)
        case let .delete(name, alias, written):
            let table = try context.table(name, facts)
            let names = [name.text] + (alias.map { [$0.text] } ?? [])
            return .delete(table: table.name, conditions: try context.conditions(written, of: table, names: names))
        }
    }
}

/// One statement's analysis: its number (for the reasons) and the mutation's parameters.
private struct StatementContext {
    var number: Int
    var parameters: [String: Set<SQLStorageClass>]

    func table(_ name: StatementParser.Name, _ facts: (String) -> TableFacts?) throws(UnstatedEffect) -> TableFacts {
        guard let table = facts(name.text) else { throw .unknownTable(statement: number, table: name.text) }
        if let trigger = table.triggers.first { throw .trigger(statement: number, table: table.name, trigger: trigger) }
        return table
    }

    func column(_ name: StatementParser.Name, of table: TableFacts) throws(UnstatedEffect) -> TableFacts.Column {
        guard let column = table.column(name.text) else { throw .form(statement: number, detail: "\(table.name) has no column \(name.text)") }
        return column
    }

    func classes(of name: String) throws(UnstatedEffect) -> Set<SQLStorageClass> {
        guard let classes = parameters[name] else { throw .unknownParameter(statement: number, name: name) }
        return classes
    }

    /// The value `expression` stores in `column`: itself when stored as given, else not stated.
    func stored(_ expression: StatementParser.Expression, in column: TableFacts.Column) throws(UnstatedEffect) -> RowOperand? {
        switch expression {
        case .other: return nil
        case let .operand(.value(value)): return column.storesExactly.contains(SQLStorageClass(of: value)) ? .value(value) : nil
        case let .operand(.parameter(name)):
            return try classes(of: name).isSubset(of: column.storesExactly) ? .parameter(name) : nil
        }
    }

    func inserted(columns: [StatementParser.Name]?, values: [StatementParser.Expression],
                  in table: TableFacts) throws(UnstatedEffect) -> [String: RowOperand?] {
        let named: [TableFacts.Column]
        if let columns {
            named = try columns.map { name throws(UnstatedEffect) in try column(name, of: table) }
        } else {
            named = table.columns.filter { !$0.isGenerated }
            guard named.count == values.count else {
                throw .form(statement: number, detail: "\(values.count) values for the \(named.count) columns of \(table.name)")
            }
        }
        var row: [String: RowOperand?] = [:]
        for column in table.columns where !column.isGenerated {
            if case let .value(value) = column.defaultValue { row[column.name] = .value(value) } else { row[column.name] = .some(nil) }
        }
        for column in table.columns where column.isGenerated { row[column.name] = .some(nil) }
        for (column, expression) in zip(named, values) {
            guard !column.isGenerated else { throw .form(statement: number, detail: "it sets \(column.name), a generated column") }
            row[column.name] = try stored(expression, in: column)
        }
        return row
    }

    func conditions(_ written: [StatementParser.Condition], of table: TableFacts, names: [String]) throws(UnstatedEffect) -> [RowCondition] {
        var conditions: [RowCondition] = []
        for condition in written {
            if let qualifier = condition.qualifier, !names.contains(where: { table.matches(qualifier, $0) }) {
                throw .condition(statement: number, detail: "\(qualifier.text).\(condition.column.text) is not a column of \(table.name)")
            }
            let column = try column(condition.column, of: table)
            var classes: Set<SQLStorageClass> = []
            switch condition.operand {
            case nil: break
            case let .value(value)?: classes = [SQLStorageClass(of: value)]
            case let .parameter(name)?: classes = try self.classes(of: name)
            }
            classes.remove(.null)
            guard classes.isSubset(of: column.comparesExactly) else {
                throw .condition(statement: number, detail: "\(column.name) \(condition.test.rawValue) … converts one side")
            }
            guard !classes.contains(.text) || column.collation != nil else {
                throw .condition(statement: number, detail: "\(column.name) compares text under a collation clients cannot reproduce")
            }
            conditions.append(RowCondition(column: column.name, test: condition.test, operand: condition.operand, collation: column.collation ?? .binary))
        }
        return conditions
    }
}

extension TableFacts {
    /// Whether `written` (a qualifier in a statement) names the table as `name` does.
    func matches(_ written: StatementParser.Name, _ name: String) -> Bool {
        namesIgnoreCase ? written.text.asciiLowercased == name.asciiLowercased : written.text == name
    }
}
