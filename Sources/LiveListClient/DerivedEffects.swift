import LiveListWire

/// The pending changes a mutation makes to a list, derived from the effects the server states
/// for it (``RemoteListModel/effects``) and the rows the client holds, as docs/PROTOCOL.md's
/// "Effects the server states" describes: the statements run in order over the rows they touch,
/// and the changes are the difference from the rows held. Pure: lists in, changes out.
enum DerivedEffects {
    /// A list as the derivation reads it: its stated effects, its column names, and the rows it
    /// holds by identity (their values in column order, `nil` when not loaded).
    struct List {
        var effects: WireEffects
        var columns: [String]
        var rows: [WireValue: [WireValue]?]
    }

    /// Why a mutation shows nothing derived on a list.
    enum Stop: Error, Equatable {
        /// An argument not given, without a default.
        case unknownOperand
        /// A condition or a value shown needs a column not known.
        case unknownColumn
        /// An update or a delete of a row no list holds, or of one in this list outside the rows held.
        case rowNotHeld
        /// An inserted row's identity is not known, or NULL (the database's to give).
        case unknownIdentity
        /// An insert of an identity a list holds (the database refuses it).
        case identityTaken
        /// Two columns of the list share a name and would show different values.
        case unrepresentable
    }

    /// A row of the table as the statements leave it (values by table column; a column not
    /// there is not known; `nil`: deleted).
    struct Entry {
        enum Origin { case held, other, new, unknown }
        var origin: Origin
        var id: WireValue
        var values: [String: WireValue]?
        /// Whether it is in this list (`nil`: a row of another list no statement touched yet).
        var inList: Bool?
        /// The values of the list's expression columns while the row's values stay as held.
        var expressions: [WireValue?]
        var heldValues: [WireValue]?
    }

    /// The changes mutation `name` with `arguments` makes to `list`, whose rows may come from
    /// `others` (the client's other lists): `nil` when the list states no effect for it, a
    /// ``Stop`` when it cannot be stated, the changes (maybe none) otherwise.
    /// - Complexity: O(w + s · c) for w rows held, s statements and c columns.
    static func changes(_ name: String, arguments: [String: WireValue], list: List, others: [List]) -> Result<[PendingChange], Stop>? {
        guard let statements = list.effects.mutations[name] else { return nil }
        let sources = others.filter { $0.effects.table == list.effects.table && $0.effects.identity == list.effects.identity }
        var derivation = Derivation(list: list, sources: sources, arguments: arguments)
        do {
            for statement in statements { try derivation.run(statement) }
            return .success(try derivation.differences())
        } catch {
            return .failure(error)
        }
    }
}

/// One derivation's state: the entries the statements touched, in the order they first did.
private struct Derivation {
    typealias Stop = DerivedEffects.Stop
    typealias Entry = DerivedEffects.Entry

    let list: DerivedEffects.List
    let sources: [DerivedEffects.List]
    let arguments: [String: WireValue]
    private var entries: [WireValue: Entry] = [:]
    private var touched: [WireValue] = []

    init(list: DerivedEffects.List, sources: [DerivedEffects.List], arguments: [String: WireValue]) {
        self.list = list
        self.sources = sources
        self.arguments = arguments
    }

    private var effects: WireEffects { list.effects }
    private var expressionCount: Int { effects.columns.count { $0 == nil } }

    func resolve(_ operand: WireOperand) throws(Stop) -> WireValue {
        guard let value = operand.resolved(arguments) else { throw .unknownOperand }
        return value
    }

    /// `values` or `set` resolved: a value not stated is left out (not known).
    func assignments(_ given: [String: WireOperand?]) throws(Stop) -> [String: WireValue] {
        var values: [String: WireValue] = [:]
        for case let (column, operand?) in given { values[column] = try resolve(operand) }
        return values
    }

    /// Whether `row` meets every condition: false when one is not met, else `nil` when one needs
    /// a column not known, else true.
    func meets(_ conditions: [WireCondition], _ row: [String: WireValue]) -> Bool? {
        var result: Bool? = true
        for condition in conditions {
            switch condition.isMet(by: row, arguments: arguments) {
            case false?: return false
            case nil: result = nil
            case true?: break
            }
        }
        return result
    }

    /// A held row by table column: the identity, the list's table columns, and the text or
    /// bytes its filter compares a column `=` with (every row of the list has it).
    static func tableRow(_ effects: WireEffects, id: WireValue, values: [WireValue]?) -> [String: WireValue] {
        var row: [String: WireValue] = [effects.identity: id]
        for (index, column) in effects.columns.enumerated() {
            guard let column, row[column] == nil, let values, index < values.count else { continue }
            row[column] = values[index]
        }
        for condition in effects.filter where condition.test == .equal && row[condition.column] == nil {
            switch condition.operand {
            case let .value(.text(text))? where condition.collation == .binary: row[condition.column] = .text(text)
            case let .value(.blob(bytes))?: row[condition.column] = .blob(bytes)
            default: break
            }
        }
        return row
    }

    /// The entry of identity `id`: as a statement left it, or as a list holds it.
    mutating func entry(_ id: WireValue) -> Entry? {
        if let kept = entries[id] { return kept }
        let found: Entry
        if let held = list.rows[id] {
            let expressions = effects.columns.enumerated().filter { $0.element == nil }.map { index, _ in
                held.flatMap { index < $0.count ? $0[index] : nil }
            }
            found = Entry(origin: .held, id: id, values: Self.tableRow(effects, id: id, values: held), inList: true,
                          expressions: expressions, heldValues: held)
        } else if let source = sources.first(where: { $0.rows[id] != nil }), let values = source.rows[id] {
            found = Entry(origin: .other, id: id, values: Self.tableRow(source.effects, id: id, values: values), inList: nil,
                          expressions: Array(repeating: nil, count: expressionCount), heldValues: nil)
        } else {
            return nil
        }
        set(found)
        return found
    }

    private mutating func set(_ entry: Entry) {
        if entries.updateValue(entry, forKey: entry.id) == nil { touched.append(entry.id) }
    }

    func inList(_ row: [String: WireValue]) throws(Stop) -> Bool {
        guard let met = meets(effects.filter, row) else { throw .unknownColumn }
        return met
    }

    /// A row of another list no statement touched yet: in this list, it stands outside the rows
    /// held (stop); otherwise it is not in it.
    func checkNotInList(_ entry: inout Entry) throws(Stop) {
        guard entry.inList == nil, let values = entry.values else { return }
        if try inList(values) { throw .rowNotHeld }
        entry.inList = false
    }

    mutating func insert(_ row: [String: WireValue], id: WireValue?, replacing previous: Entry?) throws(Stop) {
        guard let id, id != .null else { throw .unknownIdentity }
        let found = previous ?? entry(id)
        if found?.values != nil { throw .identityTaken }
        if found?.origin == .unknown { throw .rowNotHeld }
        set(Entry(origin: found?.origin ?? .new, id: id, values: row, inList: try inList(row),
                  expressions: Array(repeating: nil, count: expressionCount), heldValues: found?.heldValues))
    }

    mutating func run(_ statement: WireStatementEffect) throws(Stop) {
        switch statement {
        case let .insert(values):
            let row = try assignments(values)
            try insert(row, id: row[effects.identity], replacing: nil)
        case let .delete(key, conditions):
            let key = try resolve(key)
            let conditions = try conditions.map { condition throws(Stop) in try resolved(condition) }
            guard key != .null else { return }
            guard var found = entry(key), found.origin != .unknown else { throw .rowNotHeld }
            guard let old = found.values else { return }
            try checkNotInList(&found)
            switch meets(conditions, old) {
            case nil:
                guard found.origin == .other, found.inList != true else { throw .unknownColumn }
                found.origin = .unknown
                found.values = nil
            case true?:
                found.values = nil
                found.inList = false
            case false?: break
            }
            set(found)
        case let .update(key, conditions, set):
            let key = try resolve(key)
            let conditions = try conditions.map { condition throws(Stop) in try resolved(condition) }
            let assigned = try assignments(set)
            guard key != .null else { return }
            guard var found = entry(key), found.origin != .unknown else { throw .rowNotHeld }
            guard let old = found.values else { return }
            guard let met = meets(conditions, old) else { throw .unknownColumn }
            guard met else { return }
            try checkNotInList(&found)
            var values = old
            for (column, _) in set { values[column] = assigned[column] }
            guard let newID = values[effects.identity], newID != .null else { throw .unknownIdentity }
            if newID != key {
                // A new identity: the old row goes, one of the new identity comes.
                found.values = nil
                found.inList = false
                self.set(found)
                try insert(values, id: newID, replacing: entry(newID))
                return
            }
            let changed = set.keys.contains { column in assigned[column] == nil || old[column] == nil || assigned[column] != old[column] }
            found.values = values
            found.inList = try inList(values)
            if changed { found.expressions = Array(repeating: nil, count: expressionCount) }
            self.set(found)
        }
    }

    /// A condition with its operand resolved to a value.
    func resolved(_ condition: WireCondition) throws(Stop) -> WireCondition {
        var condition = condition
        if let operand = condition.operand { condition.operand = .value(try resolve(operand)) }
        return condition
    }

    /// The changes that take the rows held to the entries, in the order the statements first
    /// touched their rows.
    func differences() throws(Stop) -> [PendingChange] {
        var changes: [PendingChange] = []
        for id in touched {
            guard let found = entries[id] else { continue }
            let was = found.origin == .held
            let now = found.values != nil && found.inList == true
            if was && !now {
                changes.append(.delete(id: id))
                continue
            }
            guard now, let values = found.values else { continue }
            var shown: [String: WireValue] = [:]
            var expression = 0
            for (index, name) in list.columns.enumerated() {
                let value: WireValue?
                if let column = effects.columns[index] {
                    value = values[column]
                } else {
                    value = expression < found.expressions.count ? found.expressions[expression] : nil
                    expression += 1
                }
                let old = was ? found.heldValues.flatMap { index < $0.count ? $0[index] : nil } : nil
                if was, let old, let value, old == value { continue }
                guard let value else { throw .unknownColumn }
                if let taken = shown[name] {
                    guard taken == value else { throw .unrepresentable }
                } else if was, list.columns.count(where: { $0 == name }) > 1 {
                    throw .unrepresentable
                }
                shown[name] = value
            }
            if !was {
                changes.append(.insert(id: id, values: shown, placement: .sorted))
            } else if !shown.isEmpty {
                changes.append(.update(id: id, values: shown))
            }
        }
        return changes
    }
}
