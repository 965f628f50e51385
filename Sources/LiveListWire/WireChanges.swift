import ListDiff

/// One changeset of a subscription's list, from version `from` to version `to`: the whole
/// transition in UIKit's index conventions (``ListChanges``: deletes, reloads and move sources at
/// `from`; inserts and move destinations at `to`), the identities of the rows it inserts, moves
/// and reloads, the keys of the sections it inserts, and the rows of the client's window that it
/// did not hold. O(changes + window rows that changed) in size, never the list's.
///
/// In JSON, empty lists are left out: `sectionDeletes: [i]`, `sectionInserts: [[i, key]]`,
/// `sectionMoves: [[from, to]]`, `sectionReloads: [i]`, `deletes: [[s, i]]`,
/// `inserts: [[s, i, id]]`, `moves: [[fromS, fromI, toS, toI, id]]`, `reloads: [[s, i, id]]`,
/// `rows: [[position, id, values | null]]`.
public struct WireChanges: Hashable, Sendable {
    /// The client's subscription.
    public var sub: Int
    /// The version the changes start at (the one the client must hold).
    public var from: WireVersion
    /// The version they lead to.
    public var to: WireVersion
    /// The transition, as a presenter applies it (the client stages it; no diff).
    public var changes: ListChanges
    /// The key of each inserted section, in the order of `changes.sectionInserts`.
    public var insertedSectionKeys: [WireValue]
    /// The identity of each inserted row, in the order of `changes.itemInserts`.
    public var insertedIDs: [WireValue]
    /// The identity of each moved row, in the order of `changes.itemMoves`.
    public var movedIDs: [WireValue]
    /// The identity of each reloaded row, in the order of `changes.itemReloads`.
    public var reloadedIDs: [WireValue]
    /// Rows of the window at `to` that the client did not hold: inserted, reloaded, or come into
    /// the window.
    public var rows: [WireRow]
    /// When the server's live query saw the last commit these changes bring, in microseconds
    /// since 1970 (UTC) on the server's clock (JSON `at`; absent when unknown). A client on a
    /// clock that agrees with the server's subtracts it from its own to show commit→screen latency.
    public var observedAt: Int64?
    /// For the answer to `arguments` (JSON `"restated":true`): the new list's order and effects,
    /// which replace the client's (`nil`: not an answer to `arguments`; the client keeps its own).
    public var restated: WireRestatement?

    /// Creates a changes message; each identity list runs parallel to its kind of change.
    public init(sub: Int, from: WireVersion, to: WireVersion, changes: ListChanges, insertedSectionKeys: [WireValue],
                insertedIDs: [WireValue], movedIDs: [WireValue], reloadedIDs: [WireValue], rows: [WireRow], observedAt: Int64? = nil) {
        self.sub = sub
        self.from = from
        self.to = to
        self.changes = changes
        self.insertedSectionKeys = insertedSectionKeys
        self.insertedIDs = insertedIDs
        self.movedIDs = movedIDs
        self.reloadedIDs = reloadedIDs
        self.rows = rows
        self.observedAt = observedAt
    }

    var members: [JSONValue.Member] {
        var members: [JSONValue.Member] = [
            .init(key: "type", value: "changes"), .init(key: "from", value: .string(from.description)),
            .init(key: "to", value: .string(to.description)),
        ]
        func add(_ key: String, _ elements: [JSONValue]) {
            if !elements.isEmpty { members.append(.init(key: key, value: .array(elements))) }
        }
        func path(_ path: ItemPath) -> [JSONValue] { [.int(path.section), .int(path.item)] }
        add("sectionDeletes", changes.sectionDeletes.map { .int($0) })
        add("sectionInserts", zip(changes.sectionInserts, insertedSectionKeys).map { .array([.int($0), $1.json]) })
        add("sectionMoves", changes.sectionMoves.map { .array([.int($0.from), .int($0.to)]) })
        add("sectionReloads", changes.sectionReloads.map { .int($0) })
        add("deletes", changes.itemDeletes.map { .array(path($0)) })
        add("inserts", zip(changes.itemInserts, insertedIDs).map { .array(path($0) + [$1.json]) })
        add("moves", zip(changes.itemMoves, movedIDs).map { .array(path($0.from) + path($0.to) + [$1.json]) })
        add("reloads", zip(changes.itemReloads, reloadedIDs).map { .array(path($0) + [$1.json]) })
        add("rows", rows.map(\.json))
        if let observedAt { members.append(.init(key: "at", value: .integer(observedAt))) }
        if let restated {
            members.append(.init(key: "restated", value: .bool(true)))
            if let order = restated.order { members.append(.init(key: "order", value: order.json)) }
            if let effects = restated.effects { members.append(.init(key: "effects", value: effects.json)) }
        }
        return members
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = try fields.int("sub")
        from = try fields.version("from")
        to = try fields.version("to")
        changes = ListChanges()
        changes.sectionDeletes = try fields.integers("sectionDeletes")
        changes.sectionMoves = try fields.tuples("sectionMoves", width: 2).map { Move(from: $0[0], to: $0[1]) }
        changes.sectionReloads = try fields.integers("sectionReloads")
        changes.itemDeletes = try fields.tuples("deletes", width: 2).map { ItemPath(section: $0[0], item: $0[1]) }
        var keys: [WireValue] = []
        for (index, key) in try Self.identified(fields, "sectionInserts", width: 1) {
            changes.sectionInserts.append(index[0])
            keys.append(key)
        }
        insertedSectionKeys = keys
        var ids: [WireValue] = []
        for (path, id) in try Self.identified(fields, "inserts", width: 2) {
            changes.itemInserts.append(ItemPath(section: path[0], item: path[1]))
            ids.append(id)
        }
        insertedIDs = ids
        ids = []
        for (paths, id) in try Self.identified(fields, "moves", width: 4) {
            changes.itemMoves.append(Move(from: ItemPath(section: paths[0], item: paths[1]), to: ItemPath(section: paths[2], item: paths[3])))
            ids.append(id)
        }
        movedIDs = ids
        ids = []
        for (path, id) in try Self.identified(fields, "reloads", width: 2) {
            changes.itemReloads.append(ItemPath(section: path[0], item: path[1]))
            ids.append(id)
        }
        reloadedIDs = ids
        rows = try WireRow.rows(fields)
        switch fields.value("at") {
        case nil: observedAt = nil
        case let .integer(value)?: observedAt = value
        default: throw .invalidField("at", "expected an integer (microseconds since 1970)")
        }
        switch fields.value("restated") {
        case nil, .bool(false)?: restated = nil
        case .bool(true)?:
            restated = WireRestatement(
                order: try fields.value("order").map { json throws(WireDecodingError) in try WireOrder(json: json, columns: nil) },
                effects: try fields.value("effects").map { json throws(WireDecodingError) in try WireEffects(json: json, columns: nil) })
        default: throw .invalidField("restated", "expected a boolean")
        }
    }

    /// Arrays of `width` non-negative integers followed by a value.
    private static func identified(_ fields: Fields, _ key: String, width: Int) throws(WireDecodingError) -> [([Int], WireValue)] {
        var result: [([Int], WireValue)] = []
        for element in try fields.array(key) {
            guard case let .array(parts) = element, parts.count == width + 1 else {
                throw .invalidField(key, "expected arrays of \(width) integers and a value")
            }
            result.append((try Fields.integers(parts.prefix(width), key), try WireValue(json: parts[width])))
        }
        return result
    }
}

/// What the answer to `arguments` states of the new list, in place of what the client held: its
/// order and its mutations' effects (each `nil` when not stated).
public struct WireRestatement: Hashable, Sendable {
    /// How the server orders the new list.
    public var order: WireOrder?
    /// How the published mutations change the new list.
    public var effects: WireEffects?

    /// A restatement.
    public init(order: WireOrder?, effects: WireEffects?) {
        self.order = order
        self.effects = effects
    }
}
