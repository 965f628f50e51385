import ListDiff

/// What a server sends: one JSON object per text frame, told apart by its `type`, every one but
/// a connection-wide error naming the client's subscription in `sub`.
public enum ServerMessage: Hashable, Sendable {
    /// The whole state of a subscription's list: counts, sections and the rows of its window.
    case reset(WireReset)
    /// One changeset, from one version to the next (or composed over several).
    case changes(WireChanges)
    /// Rows of a moved window, at the subscription's current version.
    case rows(WireRows)
    /// A request failed or the query did; the connection stays usable.
    case error(WireError)
    /// The answer to a client's `sync`: every commit made before it is in what the
    /// subscription was sent, through `version`.
    case synced(WireSynced)
    /// The answer to a client's `mutate` that was applied: every change it made to the
    /// connection's subscriptions was sent before it.
    case mutated(WireMutated)

    /// The deepest nesting a server message has.
    static let maximumDepth = 10

    /// The subscription the message is for (`nil`: the whole connection).
    public var sub: Int? {
        switch self {
        case let .reset(reset): reset.sub
        case let .changes(changes): changes.sub
        case let .rows(rows): rows.sub
        case let .error(error): error.sub
        case let .synced(synced): synced.sub
        case .mutated: nil
        }
    }

    /// The message as one frame's JSON text: `{"sub":N,` then ``encodedBody()``.
    public func encoded() -> String {
        guard let sub else { return "{" + encodedBody() }
        return Self.frame(sub: sub, body: encodedBody())
    }

    /// The message without its `sub`: what every subscriber of a live query shares, encoded once
    /// and completed per subscriber by ``frame(sub:body:)``.
    ///
    /// - Complexity: O(size of the message).
    public func encodedBody() -> String {
        var text = JSONValue.object(members).serialized
        text.removeFirst()
        return text
    }

    /// A frame for subscription `sub` made of a shared body.
    public static func frame(sub: Int, body: String) -> String { "{\"sub\":\(sub)," + body }

    private var members: [JSONValue.Member] {
        switch self {
        case let .reset(reset): reset.members
        case let .changes(changes): changes.members
        case let .rows(rows): rows.members
        case let .error(error): error.members
        case let .synced(synced): synced.members
        case let .mutated(mutated): mutated.members
        }
    }

    /// Reads one frame (the client's side).
    ///
    /// - Complexity: O(n) for a frame of n bytes.
    public static func decode(_ bytes: [UInt8]) throws(WireDecodingError) -> ServerMessage {
        let (fields, type) = try Fields.message(bytes, maximumDepth: maximumDepth)
        switch type {
        case "reset": return .reset(try WireReset(fields))
        case "changes": return .changes(try WireChanges(fields))
        case "rows": return .rows(try WireRows(fields))
        case "error": return .error(try WireError(fields))
        case "synced": return .synced(try WireSynced(fields))
        case "mutated": return .mutated(try WireMutated(fields))
        default: throw .unknownType(String(type.prefix(64)))
        }
    }
}

/// A row of a window: its flat position, its identity, and its column values — `nil` while the
/// server cannot give them exactly at this version (a later changeset reloads the row with them).
/// In JSON: `[position, id, [values…] | null]`.
public struct WireRow: Hashable, Sendable {
    /// The flat position at the message's version.
    public var position: Int
    /// The row's identity.
    public var id: WireValue
    /// The values of the query's columns, in ``WireReset/columns`` order.
    public var values: [WireValue]?

    /// Creates a row.
    public init(position: Int, id: WireValue, values: [WireValue]?) {
        self.position = position
        self.id = id
        self.values = values
    }

    var json: JSONValue {
        .array([.int(position), id.json, values.map { .array($0.map(\.json)) } ?? .null])
    }

    static func rows(_ fields: Fields) throws(WireDecodingError) -> [WireRow] {
        var rows: [WireRow] = []
        for element in try fields.array("rows") {
            guard case let .array(parts) = element, parts.count == 3, case let .integer(position) = parts[0],
                  position >= 0, position <= Int64(Int32.max) else { throw .invalidField("rows", "expected [position, id, values]") }
            var values: [WireValue]?
            switch parts[2] {
            case .null: values = nil
            case let .array(items):
                var decoded: [WireValue] = []
                for item in items { decoded.append(try WireValue(json: item)) }
                values = decoded
            default: throw .invalidField("rows", "expected values or null")
            }
            rows.append(WireRow(position: Int(position), id: try WireValue(json: parts[1]), values: values))
        }
        return rows
    }
}

/// A section of a result: its key (the section column's value) and its number of rows. In JSON:
/// `[key, count]`. A query without sections has one section whose key is `null`.
public struct WireSection: Hashable, Sendable {
    /// The section's key.
    public var key: WireValue
    /// Its number of rows.
    public var count: Int

    /// Creates a section.
    public init(key: WireValue, count: Int) {
        self.key = key
        self.count = count
    }
}

/// Why a subscription's list starts over.
public enum WireResetReason: String, Hashable, Sendable, CaseIterable {
    /// The first state of a new subscription.
    case subscribed
    /// The client resumed from a version the server no longer has (another epoch, or older
    /// than the buffer).
    case versionUnavailable
    /// The changes since the client's version are more than a reset costs.
    case tooFarBehind
    /// The client did not read its frames fast enough; its pending changes were dropped.
    case slowClient
    /// Rows of the window could not be read (the database was busy or failed) and were sent
    /// without values; here is the list again.
    case readFailed
    /// The subscription's arguments changed and the new list differs from the old one by more
    /// changes than a reset costs.
    case argumentsChanged
}

/// The whole state of a subscription's list at `version`.
public struct WireReset: Hashable, Sendable {
    /// The client's subscription.
    public var sub: Int
    /// The version of the state.
    public var version: WireVersion
    /// Why the list starts over.
    public var reason: WireResetReason
    /// The names of the query's columns, the order of every row's values.
    public var columns: [String]
    /// Every section, in order.
    public var sections: [WireSection]
    /// The window the rows are for (clamped to the result).
    public var window: WireWindow
    /// The rows of the window, by position.
    public var rows: [WireRow]
    /// How the server orders the list, when it can state it exactly (`nil` otherwise): it stands
    /// until the next reset.
    public var order: WireOrder?
    /// How the server's published mutations change the list, when it can state it exactly
    /// (`nil` otherwise): it stands until the next reset.
    public var effects: WireEffects?

    /// Creates a reset.
    public init(sub: Int, version: WireVersion, reason: WireResetReason, columns: [String], sections: [WireSection],
                window: WireWindow, rows: [WireRow], order: WireOrder? = nil, effects: WireEffects? = nil) {
        self.sub = sub
        self.version = version
        self.reason = reason
        self.columns = columns
        self.sections = sections
        self.window = window
        self.rows = rows
        self.order = order
        self.effects = effects
    }

    var members: [JSONValue.Member] {
        [
            .init(key: "type", value: "reset"), .init(key: "version", value: .string(version.description)),
            .init(key: "reason", value: .string(reason.rawValue)), .init(key: "columns", value: .array(columns.map { .string($0) })),
            .init(key: "sections", value: .array(sections.map { .array([$0.key.json, .int($0.count)]) })),
            .init(key: "window", value: window.json), .init(key: "rows", value: .array(rows.map(\.json))),
        ] + (order.map { [.init(key: "order", value: $0.json)] } ?? []) + (effects.map { [.init(key: "effects", value: $0.json)] } ?? [])
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = try fields.int("sub")
        version = try fields.version("version")
        guard let reason = WireResetReason(rawValue: try fields.string("reason")) else { throw .invalidField("reason", "unknown reason") }
        self.reason = reason
        columns = []
        for column in try fields.array("columns") {
            guard case let .string(name) = column else { throw .invalidField("columns", "expected strings") }
            columns.append(name)
        }
        sections = []
        for section in try fields.array("sections") {
            guard case let .array(parts) = section, parts.count == 2, case let .integer(count) = parts[1], count >= 0,
                  count <= Int64(Int32.max) else { throw .invalidField("sections", "expected [key, count]") }
            sections.append(WireSection(key: try WireValue(json: parts[0]), count: Int(count)))
        }
        window = try WireWindow(json: try fields.required("window"), field: "window")
        rows = try WireRow.rows(fields)
        order = try fields.value("order").map { json throws(WireDecodingError) in try WireOrder(json: json, columns: columns.count) }
        effects = try fields.value("effects").map { json throws(WireDecodingError) in try WireEffects(json: json, columns: columns.count) }
    }
}

/// Rows of a moved window at the subscription's current `version`: the positions of the new window
/// whose rows the client did not hold.
public struct WireRows: Hashable, Sendable {
    /// The client's subscription.
    public var sub: Int
    /// The subscription's current version, which the rows are at.
    public var version: WireVersion
    /// The window these rows complete.
    public var window: WireWindow
    /// The rows of the window the client did not hold.
    public var rows: [WireRow]

    /// Creates a rows message.
    public init(sub: Int, version: WireVersion, window: WireWindow, rows: [WireRow]) {
        self.sub = sub
        self.version = version
        self.window = window
        self.rows = rows
    }

    var members: [JSONValue.Member] {
        [.init(key: "type", value: "rows"), .init(key: "version", value: .string(version.description)),
         .init(key: "window", value: window.json), .init(key: "rows", value: .array(rows.map(\.json)))]
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = try fields.int("sub")
        version = try fields.version("version")
        window = try WireWindow(json: try fields.required("window"), field: "window")
        rows = try WireRow.rows(fields)
    }
}
