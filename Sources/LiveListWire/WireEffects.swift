/// How the server's published mutations change one list, stated exactly (a `reset`'s
/// `effects`): the rows' table, identity and filter, and per mutation its statements on that
/// table. A client shows a mutation's effect from it while it waits for the answer, without the
/// app describing it.
///
/// ```swift
/// import LiveListWire
///
/// func meetsFilter(_ row: [String: WireValue], of effects: WireEffects) -> Bool {
///     effects.filter.allSatisfy { $0.isMet(by: row, arguments: [:]) == true }
/// }
/// ```
public struct WireEffects: Hashable, Sendable {
    /// The table the list's rows are rows of.
    public var table: String
    /// Its column that is the rows' identity.
    public var identity: String
    /// For each of the reset's columns, the table column it is (`nil`: an expression).
    public var columns: [String?]
    /// Conditions all met by a row of the table exactly when it is in the list.
    public var filter: [WireCondition]
    /// By mutation name, its statements that change ``table``, in the order they run.
    public var mutations: [String: [WireStatementEffect]]

    /// Effects.
    public init(table: String, identity: String, columns: [String?], filter: [WireCondition], mutations: [String: [WireStatementEffect]]) {
        self.table = table
        self.identity = identity
        self.columns = columns
        self.filter = filter
        self.mutations = mutations
    }

    var json: JSONValue {
        .object([
            .init(key: "table", value: .string(table)), .init(key: "identity", value: .string(identity)),
            .init(key: "columns", value: .array(columns.map { $0.map(JSONValue.string) ?? .null })),
            .init(key: "filter", value: .array(filter.map(\.json))),
            .init(key: "mutations", value: .object(mutations.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: .array($0.value.map(\.json))) })),
        ])
    }

    /// `count`: the reset's columns, when known (`nil` in a `changes`, whose list has the columns it had).
    init(json: JSONValue, columns count: Int?) throws(WireDecodingError) {
        guard case let .string(table)? = json["table"], case let .string(identity)? = json["identity"] else {
            throw .invalidField("effects", "expected table and identity")
        }
        guard case let .array(columns)? = json["columns"], count.map({ columns.count == $0 }) ?? true else {
            throw .invalidField("effects", "expected a column (or null) for each of the reset's \(count ?? 0) columns")
        }
        self.table = table
        self.identity = identity
        self.columns = []
        for column in columns {
            switch column {
            case .null: self.columns.append(nil)
            case let .string(name): self.columns.append(name)
            default: throw .invalidField("effects", "a column is a name or null")
            }
        }
        guard case let .array(filter)? = json["filter"] else { throw .invalidField("effects", "expected filter") }
        self.filter = []
        for condition in filter { self.filter.append(try WireCondition(json: condition)) }
        guard case let .object(members)? = json["mutations"] else { throw .invalidField("effects", "expected mutations") }
        mutations = [:]
        for member in members {
            guard case let .array(statements) = member.value else { throw .invalidField("effects", "a mutation's statements are an array") }
            var effects: [WireStatementEffect] = []
            for statement in statements { effects.append(try WireStatementEffect(json: statement)) }
            mutations[member.key] = effects
        }
    }
}

/// A value a statement or a filter uses: known, or the mutation's argument of a name.
public enum WireOperand: Hashable, Sendable {
    /// This value.
    case value(WireValue)
    /// The mutation's argument `name`, or `defaultValue` when the mutation does not give it.
    case argument(String, defaultValue: WireValue?)

    /// The operand's value for a mutation's `arguments` (`nil`: an argument not given, without
    /// a default).
    public func resolved(_ arguments: [String: WireValue]) -> WireValue? {
        switch self {
        case let .value(value): value
        case let .argument(name, defaultValue): arguments[name] ?? defaultValue
        }
    }

    var json: JSONValue {
        switch self {
        case let .value(value): .object([.init(key: "value", value: value.json)])
        case let .argument(name, defaultValue):
            .object([.init(key: "arg", value: .string(name))] + (defaultValue.map { [.init(key: "default", value: $0.json)] } ?? []))
        }
    }

    init(json: JSONValue) throws(WireDecodingError) {
        if let value = json["value"] {
            self = .value(try WireValue(json: value))
        } else if case let .string(name)? = json["arg"] {
            self = .argument(name, defaultValue: try json["default"].map { json throws(WireDecodingError) in try WireValue(json: json) })
        } else {
            throw .invalidField("effects", "an operand is {\"value\":…} or {\"arg\":…}")
        }
    }
}

/// A condition on a row of the table: a column compared with an operand, or tested for NULL.
public struct WireCondition: Hashable, Sendable {
    /// The test.
    public enum Test: String, Hashable, Sendable, CaseIterable {
        /// `=`, `<>`, `<`, `<=`, `>`, `>=`: the column compared with the operand.
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        /// `isNull`, `notNull`: no operand.
        case isNull, notNull
    }

    /// The table column tested.
    public var column: String
    /// The test.
    public var test: Test
    /// What the column is compared with (`nil` for `isNull` and `notNull`).
    public var operand: WireOperand?
    /// How text compares.
    public var collation: WireOrderTerm.Collation

    /// A condition.
    public init(column: String, test: Test, operand: WireOperand? = nil, collation: WireOrderTerm.Collation = .binary) {
        self.column = column
        self.test = test
        self.operand = operand
        self.collation = collation
    }

    /// Whether `row` (values by table column) meets the condition with `arguments`: `nil` when
    /// that is not known — the row lacks the column, or the operand is an argument not given
    /// without a default. A comparison with NULL on either side is not met; otherwise values
    /// compare as a ``WireOrderTerm`` compares them.
    public func isMet(by row: [String: WireValue], arguments: [String: WireValue]) -> Bool? {
        guard let value = row[column] else { return nil }
        switch test {
        case .isNull: return value == .null
        case .notNull: return value != .null
        default: break
        }
        guard let operand = operand?.resolved(arguments) else { return nil }
        guard value != .null, operand != .null else { return false }
        let result = WireOrderTerm(column: nil, nullsFirst: true, collation: collation).compare(value, operand)
        switch test {
        case .equal: return result == 0
        case .notEqual: return result != 0
        case .less: return result < 0
        case .lessOrEqual: return result <= 0
        case .greater: return result > 0
        case .greaterOrEqual: return result >= 0
        case .isNull, .notNull: return nil
        }
    }

    var json: JSONValue {
        var members: [JSONValue.Member] = [.init(key: "column", value: .string(column)), .init(key: "op", value: .string(test.rawValue))]
        if let operand { members.append(.init(key: "operand", value: operand.json)) }
        if collation != .binary { members.append(.init(key: "collation", value: .string(collation.rawValue))) }
        return .object(members)
    }

    init(json: JSONValue) throws(WireDecodingError) {
        guard case let .string(column)? = json["column"], case let .string(op)? = json["op"], let test = Test(rawValue: op) else {
            throw .invalidField("effects", "a condition is {\"column\":…,\"op\":…}")
        }
        self.column = column
        self.test = test
        switch test {
        case .isNull, .notNull: operand = nil
        default:
            guard let operand = json["operand"] else { throw .invalidField("effects", "a comparison has an operand") }
            self.operand = try WireOperand(json: operand)
        }
        switch json["collation"] {
        case nil: collation = .binary
        case let .string(name)?:
            guard let known = WireOrderTerm.Collation(rawValue: name) else { throw .invalidField("effects", "unknown collation \(name)") }
            collation = known
        default: throw .invalidField("effects", "a collation is a name")
        }
    }
}

/// One statement of a mutation on the list's table.
public enum WireStatementEffect: Hashable, Sendable {
    /// A row inserted: per table column its value (`nil`, or a column not there: not stated).
    case insert(values: [String: WireOperand?])
    /// The row whose identity is `key`, when it meets `conditions`, takes `set`'s values (`nil`:
    /// not stated).
    case update(key: WireOperand, conditions: [WireCondition], set: [String: WireOperand?])
    /// The row whose identity is `key` is deleted when it meets `conditions`.
    case delete(key: WireOperand, conditions: [WireCondition])

    var json: JSONValue {
        func values(_ values: [String: WireOperand?]) -> JSONValue {
            .object(values.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value?.json ?? .null) })
        }
        return switch self {
        case let .insert(inserted):
            .object([.init(key: "insert", value: .object([.init(key: "values", value: values(inserted))]))])
        case let .update(key, conditions, set):
            .object([.init(key: "update", value: .object([
                .init(key: "key", value: key.json), .init(key: "where", value: .array(conditions.map(\.json))), .init(key: "set", value: values(set)),
            ]))])
        case let .delete(key, conditions):
            .object([.init(key: "delete", value: .object([.init(key: "key", value: key.json), .init(key: "where", value: .array(conditions.map(\.json)))]))])
        }
    }

    init(json: JSONValue) throws(WireDecodingError) {
        func values(_ json: JSONValue?) throws(WireDecodingError) -> [String: WireOperand?] {
            guard case let .object(members)? = json else { throw .invalidField("effects", "expected values by column") }
            var values: [String: WireOperand?] = [:]
            for member in members { values[member.key] = member.value == .null ? .some(nil) : try WireOperand(json: member.value) }
            return values
        }
        func conditions(_ json: JSONValue?) throws(WireDecodingError) -> [WireCondition] {
            guard case let .array(items)? = json else { throw .invalidField("effects", "expected where") }
            var conditions: [WireCondition] = []
            for item in items { conditions.append(try WireCondition(json: item)) }
            return conditions
        }
        if let insert = json["insert"] {
            self = .insert(values: try values(insert["values"]))
        } else if let update = json["update"], let key = update["key"] {
            self = .update(key: try WireOperand(json: key), conditions: try conditions(update["where"]), set: try values(update["set"]))
        } else if let delete = json["delete"], let key = delete["key"] {
            self = .delete(key: try WireOperand(json: key), conditions: try conditions(delete["where"]))
        } else {
            throw .invalidField("effects", "a statement is {\"insert\":…}, {\"update\":…} or {\"delete\":…}")
        }
    }
}
