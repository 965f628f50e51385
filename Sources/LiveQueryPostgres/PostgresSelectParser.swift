import LiveQueryCore

/// A SELECT read into the parts a live query needs — its tables and joins, its filter and its
/// sort terms — with every part kept as the text it was written in, to be handed back to the
/// server; and every shape that cannot be followed row by row, as a refetch reason.
///
/// Only the structure is read here: names are resolved against the catalog by the plan.
package struct PostgresParsedSelect: Sendable {
    /// A table of the FROM clause: its name's parts (as PostgreSQL folds them) and its alias.
    struct TableReference: Sendable, Equatable {
        var parts: [String]
        /// The name as written, to resolve with `to_regclass`.
        var text: String
        var alias: String?
        /// The name its columns are qualified with in the statements: the alias, or the table's name.
        var qualifier: String { alias ?? parts[parts.count - 1] }
    }

    struct Join: Sendable, Equatable {
        var isLeft: Bool
        var table: TableReference
        /// The ON condition's conjuncts (split at top-level AND), as column equalities where they are.
        var conjuncts: [Conjunct]
    }

    /// A conjunct of an ON condition.
    enum Conjunct: Sendable, Equatable {
        /// `a.x = b.y`: two column references.
        case equality(ColumnReference, ColumnReference)
        case other(String)
    }

    /// `name` or `qualifier.name` (or longer: schema-qualified).
    struct ColumnReference: Sendable, Hashable {
        var qualifier: String?
        var name: String
    }

    struct SelectItem: Sendable, Equatable {
        var text: String
        var alias: String?
        /// The item as a column reference, when it is one.
        var column: ColumnReference?
    }

    struct OrderTerm: Sendable, Equatable {
        /// The expression, as written.
        var text: String
        var column: ColumnReference?
        var descending: Bool
        var nulls: SortTerm.NullsOrder?
        /// `COLLATE name`, when the term names one.
        var collation: String?
    }

    var items: [SelectItem] = []
    /// The select list as written.
    var selectList = ""
    var base: TableReference?
    var joins: [Join] = []
    /// From the first table to the end of the last join, as written.
    var fromText = ""
    var whereText: String?
    /// The column references of the WHERE clause, subqueries included (`name` or `qualifier.name`).
    var whereReferences: [ColumnReference] = []
    /// GROUP BY's terms, as written (with each as a column reference where it is one); `nil`
    /// without GROUP BY.
    var groupBy: [SelectItem]?
    /// GROUP BY's terms as written, to be handed back.
    var groupByText: String?
    /// HAVING's condition, as written.
    var havingText: String?
    var orderBy: [OrderTerm] = []
    /// The functions called: their names, and whether inside a subquery.
    var functions: [(name: String, inSubquery: Bool)] = []
    /// CURRENT_DATE, CURRENT_TIMESTAMP, LOCALTIME…: a value that changes without a commit.
    var readsCurrentTime = false
    /// What keeps the query from being followed row by row.
    var shapes: [RefetchReason.Shape] = []

    static func == (lhs: PostgresParsedSelect, rhs: PostgresParsedSelect) -> Bool {
        lhs.items == rhs.items && lhs.base == rhs.base && lhs.joins == rhs.joins && lhs.whereText == rhs.whereText
            && lhs.orderBy == rhs.orderBy && lhs.shapes == rhs.shapes
    }
}

/// Reads a SELECT (``PostgresParsedSelect``).
package struct PostgresSelectParser {
    private let text: [UInt8]
    private let tokens: [PostgresToken]
    /// Parenthesis depth before each token.
    private let depths: [Int]
    private var position = 0
    private var parsed = PostgresParsedSelect()

    private static let clauseEnds: Set<String> = ["from", "where", "group", "having", "window", "order", "limit", "offset", "fetch", "for",
                                                  "union", "intersect", "except"]
    private static let joinWords: Set<String> = ["join", "inner", "left", "right", "full", "cross", "natural", "on", "using", "lateral"]
    /// Key words a parenthesis follows that are not function calls.
    private static let notFunctions: Set<String> = ["on", "in", "exists", "and", "or", "not", "as", "using", "over", "filter", "join", "from",
                                                    "where", "select", "values", "any", "all", "some", "array", "row", "between", "when",
                                                    "then", "else", "case", "is", "like", "ilike", "by", "distinct", "within", "lateral"]
    private static let currentTimeWords: Set<String> = ["current_date", "current_time", "current_timestamp", "localtime", "localtimestamp"]

    package static func parse(_ sql: String) -> PostgresParsedSelect {
        let tokens: [PostgresToken]
        do {
            tokens = try PostgresSQLTokenizer.tokens(sql)
        } catch {
            var parsed = PostgresParsedSelect()
            parsed.shapes = [.unreadableSQL]
            return parsed
        }
        var parser = PostgresSelectParser(text: Array(sql.utf8), tokens: tokens)
        parser.read()
        return parser.parsed
    }

    private init(text: [UInt8], tokens: [PostgresToken]) {
        self.text = text
        // A trailing semicolon ends the statement.
        var tokens = tokens
        while tokens.last?.isPunctuation == ";" { tokens.removeLast() }
        self.tokens = tokens
        var depth = 0
        var depths: [Int] = []
        depths.reserveCapacity(tokens.count)
        for token in tokens {
            if token.isPunctuation == ")" || token.isPunctuation == "]" { depth -= 1 }
            depths.append(depth)
            if token.isPunctuation == "(" || token.isPunctuation == "[" { depth += 1 }
        }
        self.depths = depths
    }

    private func reason(_ shape: RefetchReason.Shape) -> RefetchReason.Shape { shape }

    private mutating func fail(_ shape: RefetchReason.Shape) {
        if !parsed.shapes.contains(shape) { parsed.shapes.append(shape) }
    }

    private var current: PostgresToken? { position < tokens.count ? tokens[position] : nil }

    private func keyword(at index: Int, _ word: String) -> Bool {
        index < tokens.count && depths[index] == 0 && tokens[index].isKeyword(word)
    }

    private func source(_ range: Range<Int>) -> String {
        guard !range.isEmpty else { return "" }
        return String(decoding: text[tokens[range.lowerBound].range.lowerBound..<tokens[range.upperBound - 1].range.upperBound], as: UTF8.self)
    }

    /// The index of the next top-level token at or after `start` that is one of `words` (or the end).
    private func next(from start: Int, _ words: Set<String>) -> Int {
        var index = start
        while index < tokens.count {
            if depths[index] == 0, case let .identifier(name, false) = tokens[index].kind, words.contains(name),
               // `IS [NOT] DISTINCT FROM` is an operator, not a clause.
               !(name == "from" && index > 0 && tokens[index - 1].isKeyword("distinct")) {
                return index
            }
            index += 1
        }
        return tokens.count
    }

    private mutating func read() {
        guard !tokens.isEmpty else {
            fail(.emptySQL)
            return
        }
        scanExpressions()
        if tokens.contains(where: { $0.isPunctuation == ";" }) { fail(.notPlainSelect) }
        guard let first = current, case let .identifier(word, false) = first.kind else {
            fail(.notPlainSelect)
            return
        }
        switch word {
        case "select": break
        case "with": return fail(.commonTableExpression)
        case "values": return fail(.values)
        default: return fail(.notPlainSelect)
        }
        position = 1
        if keyword(at: position, "distinct") {
            fail(.distinct)
            position += 1
        } else if keyword(at: position, "all") {
            position += 1
        }
        let fromIndex = next(from: position, Self.clauseEnds)
        readSelectList(position..<fromIndex)
        position = fromIndex
        guard keyword(at: position, "from") else {
            if position < tokens.count { readTail() } else { fail(.noFrom) }
            return
        }
        position += 1
        let fromStart = position
        readFrom()
        parsed.fromText = source(fromStart..<position)
        readTail()
    }

    /// Function calls, window functions and the current time anywhere in the statement.
    private mutating func scanExpressions() {
        var subqueryDepths: [Bool] = []
        for (index, token) in tokens.enumerated() {
            if token.isPunctuation == "(" {
                subqueryDepths.append(index + 1 < tokens.count && (tokens[index + 1].isKeyword("select") || tokens[index + 1].isKeyword("with")))
                continue
            }
            if token.isPunctuation == ")" {
                if !subqueryDepths.isEmpty { subqueryDepths.removeLast() }
                continue
            }
            guard case let .identifier(name, quoted) = token.kind else { continue }
            let inSubquery = subqueryDepths.contains(true)
            let qualified = index > 0 && tokens[index - 1].isPunctuation == "."
            if !quoted, Self.currentTimeWords.contains(name), !qualified, index + 1 >= tokens.count || tokens[index + 1].isPunctuation != "." {
                parsed.readsCurrentTime = true
            }
            if !quoted, name == "over", index + 1 < tokens.count, tokens[index + 1].isPunctuation == "(" || isName(tokens[index + 1]) {
                if !inSubquery { fail(.windowFunction) }
            }
            if index + 1 < tokens.count, tokens[index + 1].isPunctuation == "(", !(index > 0 && tokens[index - 1].kind == .op("::")),
               quoted || !Self.notFunctions.contains(name) {
                parsed.functions.append((name, inSubquery))
            }
        }
    }

    private func isName(_ token: PostgresToken) -> Bool {
        if case .identifier = token.kind { return true }
        return false
    }

    private mutating func readSelectList(_ range: Range<Int>) {
        parsed.selectList = source(range)
        guard !range.isEmpty else { return }
        var start = range.lowerBound
        for index in range where index == range.upperBound - 1 || (depths[index + 1] == 0 && tokens[index + 1].isPunctuation == ",") {
            let item = start..<(index + 1)
            parsed.items.append(selectItem(item))
            start = index + 2
        }
    }

    private func selectItem(_ range: Range<Int>) -> PostgresParsedSelect.SelectItem {
        var expression = range
        var alias: String?
        if range.count >= 3, tokens[range.upperBound - 2].isKeyword("as"), case let .identifier(name, _) = tokens[range.upperBound - 1].kind {
            alias = name
            expression = range.lowerBound..<(range.upperBound - 2)
        } else if range.count >= 2, case let .identifier(name, quoted) = tokens[range.upperBound - 1].kind,
                  quoted || !Self.reserved.contains(name), columnReference(range.lowerBound..<(range.upperBound - 1)) != nil
                    || tokens[range.upperBound - 2].isPunctuation == ")" || tokens[range.upperBound - 2].kind == .string {
            // `expr alias` without AS.
            alias = name
            expression = range.lowerBound..<(range.upperBound - 1)
        }
        return PostgresParsedSelect.SelectItem(text: source(expression), alias: alias, column: columnReference(expression))
    }

    /// Words that cannot be a column alias without AS (the ones a select item ends with).
    private static let reserved: Set<String> = ["null", "true", "false", "end", "asc", "desc", "and", "or", "not", "is", "in", "like", "ilike", "between"]

    /// The tokens as a column reference: `name`, `qualifier.name` or `schema.table.name`.
    private func columnReference(_ range: Range<Int>) -> PostgresParsedSelect.ColumnReference? {
        var names: [String] = []
        for (offset, index) in range.enumerated() {
            if offset % 2 == 1 {
                guard tokens[index].isPunctuation == "." else { return nil }
                continue
            }
            guard case let .identifier(name, _) = tokens[index].kind else { return nil }
            names.append(name)
        }
        guard range.count % 2 == 1, (1...3).contains(names.count) else { return nil }
        return PostgresParsedSelect.ColumnReference(qualifier: names.count > 1 ? names[names.count - 2] : nil, name: names[names.count - 1])
    }

    // MARK: - FROM

    private mutating func readFrom() {
        guard let base = tableReference() else { return }
        parsed.base = base
        while position < tokens.count {
            if depths[position] == 0, tokens[position].isPunctuation == "," {
                fail(.commaJoin)
                position = next(from: position, Self.clauseEnds.subtracting(["from"]))
                return
            }
            guard case let .identifier(word, false) = tokens[position].kind, depths[position] == 0 else { return }
            var isLeft = false
            switch word {
            case "join":
                position += 1
            case "inner" where keyword(at: position + 1, "join"):
                position += 2
            case "left":
                isLeft = true
                position += keyword(at: position + 1, "outer") ? 2 : 1
                guard keyword(at: position, "join") else { return fail(.unreadableFrom) }
                position += 1
            case "right", "full", "cross", "natural":
                fail(.joinKind(word.uppercased()))
                position = next(from: position, Self.clauseEnds.subtracting(["from"]))
                return
            default:
                return
            }
            if keyword(at: position, "lateral") {
                fail(.unreadableFrom)
                position = next(from: position, Self.clauseEnds.subtracting(["from"]))
                return
            }
            guard let table = tableReference() else { return }
            if keyword(at: position, "using") {
                fail(.joinUsing)
                position = next(from: position, Self.clauseEnds.subtracting(["from"]).union(["join", "left", "inner", "right", "full", "cross", "natural"]))
                continue
            }
            guard keyword(at: position, "on") else {
                fail(.joinWithoutOn)
                continue
            }
            position += 1
            let end = next(from: position, Self.clauseEnds.subtracting(["from"]).union(["join", "left", "inner", "right", "full", "cross", "natural"]))
            parsed.joins.append(PostgresParsedSelect.Join(isLeft: isLeft, table: table, conjuncts: conjuncts(position..<end)))
            position = end
        }
    }

    /// A table name with its alias; `nil` (with the reason) for anything else.
    private mutating func tableReference() -> PostgresParsedSelect.TableReference? {
        if keyword(at: position, "only") { position += 1 }
        guard position < tokens.count else {
            fail(.unreadableFrom)
            return nil
        }
        if tokens[position].isPunctuation == "(" {
            fail(.subqueryInFrom)
            position = next(from: position, Self.clauseEnds.subtracting(["from"]))
            return nil
        }
        var parts: [String] = []
        let start = position
        while position < tokens.count, case let .identifier(name, _) = tokens[position].kind {
            parts.append(name)
            position += 1
            guard position < tokens.count, tokens[position].isPunctuation == "." else { break }
            position += 1
        }
        guard !parts.isEmpty, parts.count <= 3 else {
            fail(.unreadableFrom)
            position = next(from: position, Self.clauseEnds.subtracting(["from"]))
            return nil
        }
        if position < tokens.count, tokens[position].isPunctuation == "(" {
            fail(.tableValuedFunction(parts.joined(separator: ".")))
            position = next(from: position, Self.clauseEnds.subtracting(["from"]))
            return nil
        }
        let text = source(start..<position)
        var alias: String?
        if keyword(at: position, "as") { position += 1 }
        if position < tokens.count, case let .identifier(name, quoted) = tokens[position].kind,
           quoted || !(Self.clauseEnds.contains(name) || Self.joinWords.contains(name)) {
            alias = name
            position += 1
        }
        if position < tokens.count, tokens[position].isPunctuation == "(" {
            // Column aliases: `t(a, b)`.
            fail(.unreadableFrom)
            position = next(from: position, Self.clauseEnds.subtracting(["from"]))
            return nil
        }
        if keyword(at: position, "tablesample") {
            fail(.unreadableFrom)
            position = next(from: position, Self.clauseEnds.subtracting(["from"]))
            return nil
        }
        return PostgresParsedSelect.TableReference(parts: parts, text: text, alias: alias)
    }

    private func conjuncts(_ range: Range<Int>) -> [PostgresParsedSelect.Conjunct] {
        var result: [PostgresParsedSelect.Conjunct] = []
        var start = range.lowerBound
        var index = range.lowerBound
        while index <= range.upperBound {
            if index == range.upperBound || (depths[index] == 0 && tokens[index].isKeyword("and")) {
                let part = start..<index
                // An AND inside BETWEEN … AND … belongs to it.
                if index < range.upperBound, tokens[part].contains(where: { $0.isKeyword("between") }),
                   tokens[part].filter({ $0.isKeyword("between") }).count > tokens[part].filter({ $0.isKeyword("and") }).count {
                    index += 1
                    continue
                }
                result.append(conjunct(part))
                start = index + 1
            }
            index += 1
        }
        return result
    }

    private func conjunct(_ range: Range<Int>) -> PostgresParsedSelect.Conjunct {
        var inner = range
        // ( a = b )
        while inner.count >= 2, tokens[inner.lowerBound].isPunctuation == "(", tokens[inner.upperBound - 1].isPunctuation == ")",
              depths[inner.lowerBound + 1...inner.upperBound - 1].allSatisfy({ $0 > depths[inner.lowerBound] }) {
            inner = (inner.lowerBound + 1)..<(inner.upperBound - 1)
        }
        if let equals = inner.first(where: { tokens[$0].kind == .op("=") && depths[$0] == depths[inner.lowerBound] }),
           let left = columnReference(inner.lowerBound..<equals), let right = columnReference((equals + 1)..<inner.upperBound) {
            return .equality(left, right)
        }
        return .other(source(range))
    }

    // MARK: - After FROM

    private mutating func readTail() {
        while position < tokens.count {
            guard depths[position] == 0, case let .identifier(word, false) = tokens[position].kind else {
                fail(.notPlainSelect)
                return
            }
            switch word {
            case "where":
                let end = next(from: position + 1, Self.clauseEnds)
                parsed.whereText = source((position + 1)..<end)
                parsed.whereReferences = columnReferences(in: (position + 1)..<end)
                position = end
            case "group":
                fail(.groupBy)
                let end = next(from: position + 1, Self.clauseEnds.subtracting(["group"]))
                readGroupBy((position + 1)..<end)
                position = end
            case "having":
                fail(.having)
                let end = next(from: position + 1, Self.clauseEnds.subtracting(["having"]))
                parsed.havingText = source((position + 1)..<end)
                position = end
            case "window":
                fail(.windowFunction)
                position = next(from: position + 1, Self.clauseEnds.subtracting(["window"]))
            case "order":
                guard keyword(at: position + 1, "by") else { return fail(.unreadableOrderBy) }
                let end = next(from: position + 2, Self.clauseEnds)
                readOrderBy((position + 2)..<end)
                position = end
            case "limit", "offset", "fetch":
                fail(.limit)
                position = next(from: position + 1, Self.clauseEnds.subtracting(["limit", "offset", "fetch"]))
            case "union", "intersect", "except":
                fail(.compoundSelect)
                return
            default:
                fail(.notPlainSelect)
                return
            }
        }
    }

    /// `BY a, b.c, lower(d)`: the terms, each as a column reference where it is one (a term that
    /// is not — an expression, a position, ROLLUP… — is kept as written).
    private mutating func readGroupBy(_ range: Range<Int>) {
        guard range.count >= 2, keyword(at: range.lowerBound, "by") else { return }
        let terms = (range.lowerBound + 1)..<range.upperBound
        parsed.groupByText = source(terms)
        var items: [PostgresParsedSelect.SelectItem] = []
        var start = terms.lowerBound
        for index in terms where index == terms.upperBound - 1 || (depths[index + 1] == 0 && tokens[index + 1].isPunctuation == ",") {
            let term = start..<(index + 1)
            items.append(PostgresParsedSelect.SelectItem(text: source(term), alias: nil, column: columnReference(term)))
            start = index + 2
        }
        parsed.groupBy = items
    }

    /// Every column reference in `range` (`name`, `qualifier.name`): identifiers not followed by
    /// `(` (a function) and not keywords, with the one before a `.` as its qualifier.
    private func columnReferences(in range: Range<Int>) -> [PostgresParsedSelect.ColumnReference] {
        var references: [PostgresParsedSelect.ColumnReference] = []
        var index = range.lowerBound
        while index < range.upperBound {
            defer { index += 1 }
            guard case let .identifier(name, quoted) = tokens[index].kind else { continue }
            if index > range.lowerBound, tokens[index - 1].isPunctuation == "." { continue }
            if index + 1 < range.upperBound, tokens[index + 1].isPunctuation == "(" { continue }
            if index + 2 < range.upperBound, tokens[index + 1].isPunctuation == ".",
               case let .identifier(column, _) = tokens[index + 2].kind {
                if index + 4 < range.upperBound, tokens[index + 3].isPunctuation == ".", case let .identifier(last, _) = tokens[index + 4].kind {
                    // schema.table.column
                    references.append(PostgresParsedSelect.ColumnReference(qualifier: column, name: last))
                    index += 4
                } else {
                    references.append(PostgresParsedSelect.ColumnReference(qualifier: name, name: column))
                    index += 2
                }
                continue
            }
            if !quoted, Self.reserved.contains(name) { continue }
            references.append(PostgresParsedSelect.ColumnReference(qualifier: nil, name: name))
        }
        return references
    }

    private mutating func readOrderBy(_ range: Range<Int>) {
        var start = range.lowerBound
        for index in range where index == range.upperBound - 1 || (depths[index + 1] == 0 && tokens[index + 1].isPunctuation == ",") {
            guard let term = orderTerm(start..<(index + 1)) else {
                fail(.unreadableOrderBy)
                return
            }
            parsed.orderBy.append(term)
            start = index + 2
        }
    }

    private func orderTerm(_ range: Range<Int>) -> PostgresParsedSelect.OrderTerm? {
        var end = range.upperBound
        var nulls: SortTerm.NullsOrder?
        var descending = false
        var collation: String?
        if end - range.lowerBound >= 2, tokens[end - 2].isKeyword("nulls") {
            if tokens[end - 1].isKeyword("first") { nulls = .first } else if tokens[end - 1].isKeyword("last") { nulls = .last } else { return nil }
            end -= 2
        }
        if end > range.lowerBound, tokens[end - 1].isKeyword("desc") {
            descending = true
            end -= 1
        } else if end > range.lowerBound, tokens[end - 1].isKeyword("asc") {
            end -= 1
        }
        if end - range.lowerBound >= 3, tokens[end - 2].isKeyword("collate"), case let .identifier(name, _) = tokens[end - 1].kind {
            collation = name
            end -= 2
        }
        guard end > range.lowerBound else { return nil }
        if tokens[range.lowerBound..<end].contains(where: { $0.isKeyword("using") && depths[range.lowerBound] == 0 }) { return nil }
        let expression = range.lowerBound..<end
        return PostgresParsedSelect.OrderTerm(text: source(expression), column: columnReference(expression), descending: descending, nulls: nulls,
                                         collation: collation)
    }
}
