import LiveQueryCore

/// The structure of a SELECT that LiveList needs to maintain it incrementally: its result
/// columns, its tables and joins, its WHERE clause and its ORDER BY terms, as spans of the source
/// text. Anything outside the shape it can maintain (GROUP BY, DISTINCT, aggregates, window
/// functions, compound selects, LIMIT, subqueries in FROM, joins other than INNER and LEFT,
/// ORDER BY expressions) is named in ``refetchReasons``: SQLite still runs the query, LiveList
/// refetches and diffs it.
struct ParsedSelect: Sendable {
    /// A column named as `table.column` or `column`.
    struct ColumnReference: Sendable, Equatable {
        var qualifier: String?
        var column: String
    }

    /// `lhs = rhs` between two columns, the `conjunct`-th condition of an ON clause.
    struct Equality: Sendable {
        var lhs: ColumnReference
        var rhs: ColumnReference
        var conjunct: Int
    }

    /// A table of the FROM clause.
    struct TableReference: Sendable {
        enum Join: Sendable, Equatable { case base, inner, left }
        var name: String
        var alias: String?
        var join: Join
        /// The ON condition's conjuncts (split at top-level AND), as source text.
        var conditions: [String]
        /// Equalities between two column references among the conjuncts, with the conjunct's
        /// position in `conditions`.
        var equalities: [Equality]
        /// Where the reference ends in the source (after its alias), for `NOT INDEXED`.
        var endOffset: Int
        /// Whether it carries `INDEXED BY` or `NOT INDEXED` already.
        var hasIndexHint: Bool

        var visibleName: String { alias ?? name }
    }

    struct OrderTerm: Sendable {
        var column: ColumnReference
        var collation: String?
        var descending: Bool
        var nulls: SortTerm.NullsOrder?
    }

    /// One item of the select list.
    enum ResultItem: Sendable, Equatable {
        /// A column as it is, with or without an alias.
        case column(ColumnReference)
        /// `*` or `table.*`.
        case star(qualifier: String?)
        /// Any other expression (a subquery included).
        case expression
    }

    var resultColumns: String = ""
    /// The select list's items, in order.
    var resultItems: [ResultItem] = []
    var tables: [TableReference] = []
    var from: String = ""
    /// Where the FROM clause is in the source's UTF-8.
    var fromRange: Range<Int> = 0..<0
    var whereClause: String?
    var order: [OrderTerm] = []
    var refetchReasons: [RefetchReason.Shape] = []
    /// Whether the result columns hold placeholders (their arguments come first).
    var resultColumnsHaveParameters = false

    /// `text` read as a column reference (`name`, `table.name`, quoted or not), or `nil` when it
    /// is another expression.
    static func columnReference(_ text: String) -> ColumnReference? {
        guard let tokens = SQLTokenizer.tokens(text), !tokens.isEmpty else { return nil }
        return Parser(tokens: tokens, source: Array(text.utf8), functions: SQLFunctions(variants: [:])).columnReference(0..<tokens.count)
    }

    /// Parses `sql`; a statement LiveList cannot read at all gives a reason, not an error (SQLite
    /// has already accepted it). `functions` tells which calls aggregate: those of the connection
    /// that compiled `sql` (``SQLFunctions/read(_:)``), the app's own included.
    init(_ sql: String, functions: SQLFunctions) {
        guard let tokens = SQLTokenizer.tokens(sql) else {
            refetchReasons.append(.unreadableSQL)
            return
        }
        Parser(tokens: tokens, source: Array(sql.utf8), functions: functions).parse(into: &self)
    }
}

private struct Parser {
    let tokens: [SQLToken]
    let source: [UInt8]
    let functions: SQLFunctions

    func text(_ range: Range<Int>) -> String {
        guard !range.isEmpty else { return "" }
        let start = tokens[range.lowerBound].range.lowerBound, end = tokens[range.upperBound - 1].range.upperBound
        return String(decoding: source[start..<end], as: UTF8.self)
    }

    /// Indices of the top-level tokens (outside parentheses) of `range`.
    func topLevel(_ range: Range<Int>) -> [Int] {
        var depth = 0
        var result: [Int] = []
        for index in range {
            let token = tokens[index]
            if token.isSymbol && token.text == "(" {
                if depth == 0 { result.append(index) }
                depth += 1
                continue
            }
            if token.isSymbol && token.text == ")" {
                depth -= 1
                continue
            }
            if depth == 0 { result.append(index) }
        }
        return result
    }

    /// Splits `range` at top-level tokens matching `separator`.
    func split(_ range: Range<Int>, where separator: (SQLToken) -> Bool) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = range.lowerBound
        for index in topLevel(range) where separator(tokens[index]) {
            parts.append(start..<index)
            start = index + 1
        }
        parts.append(start..<range.upperBound)
        return parts
    }

    /// A select-list item: a column reference without its alias (`AS alias` or a bare alias),
    /// `*`, `table.*`, or another expression.
    func resultItem(_ range: Range<Int>) -> ParsedSelect.ResultItem {
        let parts = Array(range)
        if parts.count == 1, tokens[parts[0]].isSymbol, tokens[parts[0]].text == "*" { return .star(qualifier: nil) }
        if parts.count == 3, tokens[parts[1]].text == ".", tokens[parts[2]].isSymbol, tokens[parts[2]].text == "*",
           case .identifier = tokens[parts[0]].kind {
            return .star(qualifier: tokens[parts[0]].text)
        }
        if let reference = columnReference(range) { return .column(reference) }
        guard parts.count >= 2, case .identifier = tokens[parts[parts.count - 1]].kind else { return .expression }
        let aliased = parts.count >= 3 && tokens[parts[parts.count - 2]].isKeyword("AS") ? range.lowerBound..<range.upperBound - 2
            : range.lowerBound..<range.upperBound - 1
        return columnReference(aliased).map { .column($0) } ?? .expression
    }

    /// A column reference made of the tokens of `range`: `name` or `qualifier.name`
    /// (`schema.table.name` keeps the table).
    func columnReference(_ range: Range<Int>) -> ParsedSelect.ColumnReference? {
        let parts = Array(range)
        func identifier(_ index: Int) -> String? {
            if case .identifier = tokens[index].kind { return tokens[index].text }
            return nil
        }
        switch parts.count {
        case 1: return identifier(parts[0]).map { .init(qualifier: nil, column: $0) }
        case 3 where tokens[parts[1]].text == ".":
            guard let qualifier = identifier(parts[0]), let column = identifier(parts[2]) else { return nil }
            return .init(qualifier: qualifier, column: column)
        case 5 where tokens[parts[1]].text == "." && tokens[parts[3]].text == ".":
            guard let qualifier = identifier(parts[2]), let column = identifier(parts[4]) else { return nil }
            return .init(qualifier: qualifier, column: column)
        default: return nil
        }
    }

    func parse(into select: inout ParsedSelect) {
        guard let first = tokens.first else {
            select.refetchReasons.append(.emptySQL)
            return
        }
        if first.isKeyword("WITH") {
            select.refetchReasons.append(.commonTableExpression)
            return
        }
        guard first.isKeyword("SELECT") else {
            select.refetchReasons.append(.notPlainSelect)
            return
        }
        var clauses: [(keyword: String, index: Int)] = []
        for index in topLevel(1..<tokens.count) {
            let token = tokens[index]
            for keyword in ["FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "VALUES"]
            where token.isKeyword(keyword) {
                clauses.append((keyword, index))
            }
        }
        func clause(_ keyword: String) -> Range<Int>? {
            guard let position = clauses.firstIndex(where: { $0.keyword == keyword }) else { return nil }
            let start = clauses[position].index + 1
            let end = position + 1 < clauses.count ? clauses[position + 1].index : tokens.count
            return start..<end
        }
        for (keyword, reason) in [("UNION", RefetchReason.Shape.compoundSelect), ("INTERSECT", .compoundSelect), ("EXCEPT", .compoundSelect),
                                  ("GROUP", .groupBy), ("HAVING", .having), ("WINDOW", .windowFunction),
                                  ("LIMIT", .limit), ("VALUES", .values)]
        where clauses.contains(where: { $0.keyword == keyword }) && !select.refetchReasons.contains(reason) {
            select.refetchReasons.append(reason)
        }
        var selectStart = 1
        if tokens.count > 1 && tokens[1].isKeyword("DISTINCT") {
            select.refetchReasons.append(.distinct)
            selectStart = 2
        } else if tokens.count > 1 && tokens[1].isKeyword("ALL") {
            selectStart = 2
        }
        let selectEnd = clauses.first?.index ?? tokens.count
        let selectList = selectStart..<selectEnd
        select.resultColumns = text(selectList)
        select.resultItems = split(selectList) { $0.isSymbol && $0.text == "," }.map(resultItem)
        select.resultColumnsHaveParameters = tokens[selectList].contains { $0.kind == .parameter }
        if containsAggregateOrWindow(selectList, in: &select) { return }

        guard let from = clause("FROM"), !from.isEmpty else {
            select.refetchReasons.append(.noFrom)
            return
        }
        select.from = text(from)
        select.fromRange = tokens[from.lowerBound].range.lowerBound..<tokens[from.upperBound - 1].range.upperBound
        parseFrom(from, into: &select)
        if let whereRange = clause("WHERE") {
            select.whereClause = text(whereRange)
            if tokens[whereRange].contains(where: { $0.isKeyword("OVER") }) { select.refetchReasons.append(.windowFunction) }
        }
        if let order = clause("ORDER") { parseOrder(order, into: &select) }
    }

    func containsAggregateOrWindow(_ range: Range<Int>, in select: inout ParsedSelect) -> Bool {
        // OVER first: a window function's name is an aggregate's too (`count(*) OVER ()`).
        if tokens[range].contains(where: { $0.isKeyword("OVER") }) {
            if !select.refetchReasons.contains(.windowFunction) { select.refetchReasons.append(.windowFunction) }
            return true
        }
        for index in range {
            let token = tokens[index]
            // Quoted names call functions too: `"count"(*)`.
            guard case .identifier = token.kind, index + 1 < range.upperBound, tokens[index + 1].isSymbol, tokens[index + 1].text == "(" else { continue }
            let name = token.text.lowercased()
            // By the argument count too: `min(a)` aggregates, `min(a, b)` compares.
            if functions.isAggregate(name, argumentCount: argumentCount(openingAt: index + 1, before: range.upperBound)) {
                select.refetchReasons.append(.aggregate(name))
                return true
            }
        }
        return false
    }

    /// How many arguments the call whose parenthesis opens at `open` passes: none for `f()` and
    /// `count(*)`; commas inside nested parentheses, or in an ORDER BY inside the call
    /// (`group_concat(a, ',' ORDER BY b, c)`), separate no arguments.
    func argumentCount(openingAt open: Int, before end: Int) -> Int {
        let inside = open + 1..<(closingParenthesis(of: open, before: end) ?? end)
        if inside.isEmpty || (inside.count == 1 && tokens[inside.lowerBound].isSymbol && tokens[inside.lowerBound].text == "*") { return 0 }
        var count = 1
        for index in topLevel(inside) {
            if tokens[index].isKeyword("ORDER") { break }
            if tokens[index].isSymbol && tokens[index].text == "," { count += 1 }
        }
        return count
    }

    /// The FROM clause as table references joined by INNER or LEFT joins with ON conditions;
    /// anything else is named in `select.refetchReasons` and ends the reading.
    func parseFrom(_ range: Range<Int>, into select: inout ParsedSelect) {
        var index = range.lowerBound
        var join: ParsedSelect.TableReference.Join = .base
        do throws(UnreadableFrom) {
            while index < range.upperBound {
                var reference = try parseTable(at: &index, in: range, join: join)
                if index < range.upperBound, tokens[index].isKeyword("USING") { throw UnreadableFrom(shape: .joinUsing) }
                if index < range.upperBound, tokens[index].isKeyword("ON") {
                    parseOn(at: &index, in: range, into: &reference)
                } else if join != .base {
                    throw UnreadableFrom(shape: .joinWithoutOn)
                }
                select.tables.append(reference)
                guard index < range.upperBound else { break }
                join = try parseJoinOperator(at: &index, in: range)
            }
        } catch {
            select.refetchReasons.append(error.shape)
        }
    }

    /// What ends the reading of a FROM clause: the shape LiveList does not maintain.
    private struct UnreadableFrom: Error {
        var shape: RefetchReason.Shape
    }

    private static let joinWords: Set<String> = ["JOIN", "INNER", "LEFT", "OUTER", "CROSS", "NATURAL", "RIGHT", "FULL", "ON", "USING"]

    /// Whether `token` is a join keyword or the comma of a comma join.
    private func isJoinWord(_ token: SQLToken) -> Bool {
        Self.joinWords.contains { token.isKeyword($0) } || (token.isSymbol && token.text == ",")
    }

    /// A table: `[schema.]name [[AS] alias] [INDEXED BY i | NOT INDEXED]`, from `index` on.
    private func parseTable(at index: inout Int, in range: Range<Int>,
                            join: ParsedSelect.TableReference.Join) throws(UnreadableFrom) -> ParsedSelect.TableReference {
        guard case .identifier = tokens[index].kind else {
            throw UnreadableFrom(shape: tokens[index].text == "(" ? .subqueryInFrom : .unreadableFrom)
        }
        var name = tokens[index].text
        index += 1
        if index + 1 < range.upperBound, tokens[index].text == ".", case .identifier = tokens[index + 1].kind {
            guard name.lowercased() == "main" else { throw UnreadableFrom(shape: .otherSchema(name)) }
            name = tokens[index + 1].text
            index += 2
        }
        if index < range.upperBound, tokens[index].text == "(" { throw UnreadableFrom(shape: .tableValuedFunction(name)) }
        var alias: String?
        if index < range.upperBound, tokens[index].isKeyword("AS") { index += 1 }
        if index < range.upperBound, case .identifier = tokens[index].kind, !isJoinWord(tokens[index]),
           !tokens[index].isKeyword("INDEXED"), !tokens[index].isKeyword("NOT") {
            alias = tokens[index].text
            index += 1
        }
        let endOffset = tokens[index - 1].range.upperBound
        var hasIndexHint = false
        if index < range.upperBound, tokens[index].isKeyword("INDEXED") || tokens[index].isKeyword("NOT") {
            index += tokens[index].isKeyword("NOT") ? 2 : 3
            hasIndexHint = true
        }
        return ParsedSelect.TableReference(name: name, alias: alias, join: join, conditions: [], equalities: [],
                                            endOffset: endOffset, hasIndexHint: hasIndexHint)
    }

    /// The ON condition at `index`, up to the next join operator: its conjuncts, and those that
    /// equate two columns.
    private func parseOn(at index: inout Int, in range: Range<Int>, into reference: inout ParsedSelect.TableReference) {
        let start = index + 1
        var end = start
        let topLevelIndices = Set(topLevel(start..<range.upperBound))
        while end < range.upperBound {
            let token = tokens[end]
            if topLevelIndices.contains(end) && isJoinWord(token) && !token.isKeyword("ON") && !token.isKeyword("USING")
                && !token.isKeyword("OUTER") { break }
            end += 1
        }
        for conjunct in split(start..<end, where: { $0.isKeyword("AND") }) {
            reference.conditions.append(text(conjunct))
            let sides = split(trimmed(conjunct), where: { $0.isSymbol && ($0.text == "=" || $0.text == "==") })
            if sides.count == 2, let lhs = columnReference(trimmed(sides[0])), let rhs = columnReference(trimmed(sides[1])) {
                reference.equalities.append(.init(lhs: lhs, rhs: rhs, conjunct: reference.conditions.count - 1))
            }
        }
        index = end
    }

    /// The join operator at `index`: `JOIN`, `INNER JOIN` or `LEFT [OUTER] JOIN`.
    private func parseJoinOperator(at index: inout Int, in range: Range<Int>) throws(UnreadableFrom) -> ParsedSelect.TableReference.Join {
        let token = tokens[index]
        if token.isSymbol && token.text == "," { throw UnreadableFrom(shape: .commaJoin) }
        if token.isKeyword("JOIN") {
            index += 1
            return .inner
        }
        if token.isKeyword("INNER"), index + 1 < range.upperBound, tokens[index + 1].isKeyword("JOIN") {
            index += 2
            return .inner
        }
        guard token.isKeyword("LEFT") else { throw UnreadableFrom(shape: .joinKind(token.text.uppercased())) }
        index += 1
        if index < range.upperBound, tokens[index].isKeyword("OUTER") { index += 1 }
        guard index < range.upperBound, tokens[index].isKeyword("JOIN") else { throw UnreadableFrom(shape: .unreadableFrom) }
        index += 1
        return .left
    }

    /// `range` without surrounding parentheses.
    func trimmed(_ range: Range<Int>) -> Range<Int> {
        var range = range
        while range.count >= 2, tokens[range.lowerBound].text == "(", closingParenthesis(of: range.lowerBound, before: range.upperBound) == range.upperBound - 1 {
            range = range.lowerBound + 1..<range.upperBound - 1
        }
        return range
    }

    /// The token that closes the parenthesis opened at `open`, searched before `end`.
    func closingParenthesis(of open: Int, before end: Int) -> Int? {
        var depth = 0
        for index in open..<end where tokens[index].isSymbol {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }

    func parseOrder(_ range: Range<Int>, into select: inout ParsedSelect) {
        guard range.lowerBound < range.upperBound, tokens[range.lowerBound].isKeyword("BY") else {
            select.refetchReasons.append(.unreadableOrderBy)
            return
        }
        if tokens[range].contains(where: { $0.isKeyword("OVER") }) {
            if !select.refetchReasons.contains(.windowFunction) { select.refetchReasons.append(.windowFunction) }
            return
        }
        for term in split(range.lowerBound + 1..<range.upperBound, where: { $0.isSymbol && $0.text == "," }) {
            var end = term.upperBound
            var nulls: SortTerm.NullsOrder?
            var descending = false
            var collation: String?
            if end - term.lowerBound >= 2, tokens[end - 2].isKeyword("NULLS") {
                nulls = tokens[end - 1].isKeyword("FIRST") ? .first : .last
                end -= 2
            }
            if end > term.lowerBound, tokens[end - 1].isKeyword("DESC") || tokens[end - 1].isKeyword("ASC") {
                descending = tokens[end - 1].isKeyword("DESC")
                end -= 1
            }
            if end - term.lowerBound >= 2, tokens[end - 2].isKeyword("COLLATE") {
                collation = tokens[end - 1].text
                end -= 2
            }
            guard let column = columnReference(trimmed(term.lowerBound..<end)) else {
                select.refetchReasons.append(.orderByExpression(text(term.lowerBound..<end)))
                return
            }
            select.order.append(.init(column: column, collation: collation, descending: descending, nulls: nulls))
        }
    }
}
