import LiveQueryCore
import PostgresNIO

/// The order of a SELECT followed row by row: its sort terms, each compared here exactly as
/// PostgreSQL compares it, and the section that must lead them.
extension PostgresPlanner {
    /// The sort terms: columns of the FROM tables, compared here exactly as PostgreSQL does, and
    /// expressions (aggregates of a grouped query too) read as hidden columns and typed. Terms
    /// that cannot be followed add their shape and are left out.
    func sortTerms(_ parsed: PostgresParsedSelect, roles: [Role], columns: [(name: String, type: UInt32)], children: [Int: Column],
                           grouped: Bool, shapes: inout [RefetchReason.Shape]) async throws(PostgresLiveQueryError) -> [Term] {
        var terms: [Term?] = []
        var expressions: [(index: Int, text: String)] = []
        for term in parsed.orderBy {
            guard let reference = term.column else {
                if Int(term.text.trimmingCharacters(in: .whitespaces)) != nil {
                    // A position in the select list.
                    shapes.append(.orderByExpression(term.text))
                } else {
                    expressions.append((terms.count, term.text))
                    terms.append(nil)
                }
                continue
            }
            guard let resolved = resolve(reference, parsed, roles, columns), children[resolved.role] == nil else {
                // An output column that an expression makes: that expression.
                if reference.qualifier == nil, let item = parsed.items.first(where: { $0.alias == reference.name }), item.column == nil,
                   parsed.items.filter({ $0.alias == reference.name }).count == 1 {
                    expressions.append((terms.count, item.text))
                    terms.append(nil)
                } else {
                    shapes.append(.orderByNotColumn(term.text))
                }
                continue
            }
            if let column = try await columnTerm(term, resolved: resolved, roles: roles, shapes: &shapes) { terms.append(column) }
        }
        if !expressions.isEmpty, shapes.isEmpty {
            let typed = try await expressionTerms(expressions.map { ($0.text, parsed.orderBy[$0.index]) }, parsed, grouped: grouped, shapes: &shapes)
            for (expression, term) in zip(expressions, typed) { terms[expression.index] = term }
        }
        return terms.compactMap { $0 }
    }

    /// The sort term of a column of a FROM table, compared as PostgreSQL compares it (its
    /// collation's bytes); `nil` with the shape when that cannot be done here.
    func columnTerm(_ term: PostgresParsedSelect.OrderTerm, resolved: (role: Int, column: Column), roles: [Role],
                            shapes: inout [RefetchReason.Shape]) async throws(PostgresLiveQueryError) -> Term? {
        guard let type = PostgresType(oid: resolved.column.typeOID) else {
            shapes.append(.orderByType(column: term.text, type: resolved.column.typeName))
            return nil
        }
        if type.isCollatable {
            var column = resolved.column
            if let collation = term.collation {
                (column.collation, column.provider) = try await PostgresCatalog.collation(named: collation, session)
                column.collationName = collation
            }
            if !Self.comparesByBytes(column) {
                shapes.append(.customCollation((column.collationName ?? "") + " (" + (column.collation ?? "") + ")"))
                return nil
            }
        }
        let descending = term.descending
        let rule = PostgresOrdering.Rule(comparison: type.comparison, descending: descending, nullsFirst: term.nulls.map { $0 == .first } ?? descending)
        let sql = Self.quoted(roles[resolved.role].qualifier) + "." + Self.quoted(resolved.column.name)
        return Term(role: resolved.role, column: resolved.column, rule: rule, sql: sql, collation: term.collation, parsed: term)
    }

    /// A section column must be the first sort term, as written or as the same column resolved.
    func checkSection(_ section: String, terms: [Term], _ parsed: PostgresParsedSelect, roles: [Role],
                              columns: [(name: String, type: UInt32)]) throws(PostgresLiveQueryError) {
        let first = parsed.orderBy.first
        let written = first.map { Self.same(section, $0.text) } ?? false
        let resolvedSame = terms.first.map { term in
            term.parsed == first && reference(section).flatMap { resolve($0, parsed, roles, columns) }
                .map { $0.role == term.role && $0.column.name == term.column.name } == true
        } ?? false
        guard written || resolvedSame else { throw .sectionNotFirstSortTerm(section) }
    }
}
