import LiveListWire
import LiveQueryCore

/// The published mutations' effects as the engine states them, read once — when the server
/// first needs them (its start-up report, or the first subscription) — and kept: the schema they
/// read is the one the server serves. A read that failed (the database away) is not kept.
actor StatedEffects {
    private var catalog: [String: MutationEffects]?
    private var reading: Task<[String: MutationEffects], Never>?

    func catalog(engine: any LiveQueryEngine, mutations: [String: PublishedMutation]) async -> [String: MutationEffects] {
        if let catalog { return catalog }
        if let reading { return await reading.value }
        let task = Task {
            var catalog: [String: MutationEffects] = [:]
            for (name, mutation) in mutations {
                catalog[name] = if case .statements = mutation.definition { await engine.effects(of: mutation) } else { .unstated(.notStatements) }
            }
            return catalog
        }
        reading = task
        let read = await task.value
        reading = nil
        // A schema that could not be read (the database away at start) is read again next time.
        let unread = read.values.contains { if case .unstated(.schemaUnreadable) = $0 { true } else { false } }
        if !unread { catalog = read }
        return read
    }
}

/// What one connection's lists are told of the mutations (a reset's `effects`): the stated
/// effects with the mutations' parameters, those bound to a token claim taken from the
/// connection's claims.
struct ListEffects: Sendable {
    let catalog: [String: MutationEffects]
    let mutations: [String: PublishedMutation]
    let claims: [String: WireValue]?

    /// The effects on a list of `source` (`nil` when no source is stated). A mutation is in it
    /// when every statement of it on the list's table finds its row by the list's identity and
    /// leaves that identity as it is.
    /// - Complexity: O(m · s) for m mutations of s statements.
    func wire(for source: ResultSource?) -> WireEffects? {
        guard let source else { return nil }
        var stated: [String: [WireStatementEffect]] = [:]
        for (name, effects) in catalog {
            guard case let .stated(statements) = effects, let mutation = mutations[name],
                  let onTable = onTable(statements, source: source, mutation: mutation), !onTable.isEmpty else { continue }
            stated[name] = onTable
        }
        return WireEffects(table: source.table, identity: source.identity, columns: source.columns,
                           filter: source.filter.compactMap { condition($0, mutation: nil) }, mutations: stated)
    }

    /// The statements of a mutation on the list's table, for the wire (`nil`: one cannot be told).
    private func onTable(_ statements: [StatementEffect], source: ResultSource, mutation: PublishedMutation) -> [WireStatementEffect]? {
        var result: [WireStatementEffect] = []
        for statement in statements where statement.table == source.table {
            switch statement {
            case let .insert(_, values):
                guard let values = self.values(values, mutation: mutation) else { return nil }
                result.append(.insert(values: values))
            case let .update(_, conditions, set):
                guard set[source.identity] == nil, let (key, rest) = keyed(conditions, by: source.identity, mutation: mutation),
                      let values = self.values(set, mutation: mutation) else { return nil }
                result.append(.update(key: key, conditions: rest, set: values))
            case let .delete(_, conditions):
                guard let (key, rest) = keyed(conditions, by: source.identity, mutation: mutation) else { return nil }
                result.append(.delete(key: key, conditions: rest))
            }
        }
        return result
    }

    /// The operand of the condition `identity = …` (compared as stored), and the other conditions.
    private func keyed(_ conditions: [RowCondition], by identity: String, mutation: PublishedMutation) -> (WireOperand, [WireCondition])? {
        guard let index = conditions.firstIndex(where: { $0.column == identity && $0.test == .equal && $0.collation == .binary }),
              let operand = conditions[index].operand, let key = self.operand(operand, mutation: mutation) else { return nil }
        var rest: [WireCondition] = []
        for (offset, condition) in conditions.enumerated() where offset != index {
            guard let wire = self.condition(condition, mutation: mutation) else { return nil }
            rest.append(wire)
        }
        return (key, rest)
    }

    private func values(_ values: [String: RowOperand?], mutation: PublishedMutation) -> [String: WireOperand?]? {
        var wire: [String: WireOperand?] = [:]
        for (column, operand) in values {
            guard let operand else {
                wire[column] = .some(nil)
                continue
            }
            guard let stated = self.operand(operand, mutation: mutation) else { return nil }
            wire[column] = stated
        }
        return wire
    }

    private func condition(_ condition: RowCondition, mutation: PublishedMutation?) -> WireCondition? {
        let test = WireCondition.Test(rawValue: condition.test.rawValue) ?? .equal
        let collation: WireOrderTerm.Collation = switch condition.collation {
        case .binary, .custom: .binary
        case .nocase: .nocase
        case .rtrim: .rtrim
        }
        guard let operand = condition.operand else { return WireCondition(column: condition.column, test: test, collation: collation) }
        guard let wire = self.operand(operand, mutation: mutation) else { return nil }
        return WireCondition(column: condition.column, test: test, operand: wire, collation: collation)
    }

    /// A value as it is; a parameter as the client's argument with its default, or the claim's
    /// value for one bound to a claim (`nil` when the connection has no such claim).
    private func operand(_ operand: RowOperand, mutation: PublishedMutation?) -> WireOperand? {
        switch operand {
        case let .value(value): return .value(value.wire)
        case let .parameter(name):
            guard let parameter = mutation?.parameters.first(where: { $0.name == name }) else { return nil }
            if let claim = parameter.claim {
                return claims?[claim].map(WireOperand.value)
            }
            return .argument(name, defaultValue: parameter.defaultValue)
        }
    }
}
