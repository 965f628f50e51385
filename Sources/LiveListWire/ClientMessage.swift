/// What a client sends: one JSON object per text frame, told apart by its `type`.
///
/// ```swift
/// import LiveListWire
///
/// func roundTrip() throws -> ClientMessage {
///     let subscribe = ClientMessage.subscribe(WireSubscription(
///         sub: 1, query: "inbox", arguments: ["folder": .text("work")], window: WireWindow(start: 0, count: 60)))
///     let frame = subscribe.encoded()
///     return try ClientMessage.decode(Array(frame.utf8))
/// }
/// ```
public enum ClientMessage: Hashable, Sendable {
    /// Opens subscription `sub` on a published query.
    case subscribe(WireSubscription)
    /// Moves subscription `sub`'s window; the server answers with the rows the client lacks.
    case window(sub: Int, WireWindow)
    /// Ends subscription `sub`.
    case unsubscribe(sub: Int)
    /// New arguments for an open subscription (a new filter or sort): the server answers with one
    /// `changes` from the list the client holds to the list of the new arguments, or a reset
    /// (`argumentsChanged`) when that would be more changes than a reset costs.
    case arguments(sub: Int, [String: WireValue])
    /// Asks subscription `sub`'s server to look for every commit made before it (other
    /// processes' too) and to answer with `synced` (the same `id`) once it has sent the
    /// subscription every change they made: a client that has `synced` holds them.
    case sync(sub: Int, id: Int)
    /// Runs a published mutation, once per (client, id): answered by `mutated` after the
    /// connection's subscriptions were sent its commit, or by an `error` naming the mutation.
    case mutate(WireMutation)

    /// The deepest nesting a client message has (the arguments' blob and big-integer objects).
    static let maximumDepth = 4

    /// The message as one frame's JSON text.
    public func encoded() -> String { json.serialized }

    var json: JSONValue {
        switch self {
        case let .subscribe(subscription): subscription.json
        case let .window(sub, window): .object([.init(key: "type", value: "window"), .init(key: "sub", value: .int(sub)), .init(key: "window", value: window.json)])
        case let .unsubscribe(sub): .object([.init(key: "type", value: "unsubscribe"), .init(key: "sub", value: .int(sub))])
        case let .arguments(sub, arguments):
            .object([.init(key: "type", value: "arguments"), .init(key: "sub", value: .int(sub)),
                     .init(key: "arguments", value: WireSubscription.json(arguments))])
        case let .sync(sub, id): .object([.init(key: "type", value: "sync"), .init(key: "sub", value: .int(sub)), .init(key: "id", value: .int(id))])
        case let .mutate(mutation): mutation.json
        }
    }

    /// Reads one frame. Fields the protocol does not name are ignored (later versions may add
    /// some); everything it names is checked.
    ///
    /// - Complexity: O(n) for a frame of n bytes, at most ``maximumDepth`` levels of recursion.
    public static func decode(_ bytes: [UInt8]) throws(WireDecodingError) -> ClientMessage {
        let (fields, type) = try Fields.message(bytes, maximumDepth: maximumDepth)
        switch type {
        case "subscribe": return .subscribe(try WireSubscription(fields))
        case "window": return .window(sub: try fields.int("sub"), try WireWindow(json: try fields.required("window"), field: "window"))
        case "unsubscribe": return .unsubscribe(sub: try fields.int("sub"))
        case "arguments":
            let sub = try fields.int("sub")
            let (arguments, invalid) = try WireSubscription.arguments(fields)
            if let invalid { throw .badArguments(.arguments(sub: sub, [:]), invalid) }
            return .arguments(sub: sub, arguments)
        case "sync": return .sync(sub: try fields.int("sub"), id: try fields.int("id"))
        case "mutate": return .mutate(try WireMutation(fields))
        default: throw .unknownType(String(type.prefix(64)))
        }
    }
}

/// A subscription's opening: which published query, with which arguments, which window, and —
/// when the client held the list before — the version it holds, to resume from.
public struct WireSubscription: Hashable, Sendable {
    /// The client's number for the subscription, unique on its connection (0 ... 2³¹ − 1).
    public var sub: Int
    /// The published query's name.
    public var query: String
    /// The query's arguments by parameter name.
    public var arguments: [String: WireValue]
    /// The positions the client shows, with its prefetch margin.
    public var window: WireWindow
    /// What the client holds, when it resumes.
    public var resume: WireResume?

    /// Creates a subscription.
    public init(sub: Int, query: String, arguments: [String: WireValue] = [:], window: WireWindow, resume: WireResume? = nil) {
        self.sub = sub
        self.query = query
        self.arguments = arguments
        self.window = window
        self.resume = resume
    }

    var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "type", value: "subscribe"), .init(key: "sub", value: .int(sub)), .init(key: "query", value: .string(query)),
            .init(key: "arguments", value: Self.json(arguments)),
            .init(key: "window", value: window.json),
        ]
        if let resume {
            members.append(.init(key: "resume", value: .object([
                .init(key: "version", value: .string(resume.version.description)), .init(key: "held", value: resume.held.json),
            ])))
        }
        return .object(members)
    }

    static func json(_ arguments: [String: WireValue]) -> JSONValue {
        .object(arguments.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value.json) })
    }

    /// The `arguments` object of a message (absent: none), and why the first argument that is not
    /// a value of the protocol's form is not (the request is then refused alone, with
    /// `badArguments`; an `arguments` that is not an object is not a message of the protocol).
    static func arguments(_ fields: Fields) throws(WireDecodingError) -> (values: [String: WireValue], invalid: String?) {
        var arguments: [String: WireValue] = [:]
        switch fields.value("arguments") {
        case nil: break
        case let .object(members)?:
            for member in members {
                guard arguments[member.key] == nil else { throw .invalidField("arguments", "\"\(member.key)\" given twice") }
                do {
                    arguments[member.key] = try WireValue(json: member.value)
                } catch {
                    let reason = if case let .invalidValue(reason) = error { reason } else { error.description }
                    return ([:], "argument \"\(member.key.prefix(256))\" is not a value of the protocol: \(reason)")
                }
            }
        default: throw .invalidField("arguments", "expected an object")
        }
        return (arguments, nil)
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = try fields.int("sub")
        query = try fields.string("query", maximumLength: 256)
        window = try WireWindow(json: try fields.required("window"), field: "window")
        let (arguments, invalid) = try Self.arguments(fields)
        self.arguments = arguments
        if let resume = fields.value("resume"), resume != .null {
            let resumeFields: Fields
            do {
                resumeFields = try Fields(resume)
            } catch {
                throw .invalidField("resume", "expected an object")
            }
            self.resume = WireResume(version: try resumeFields.version("version"),
                                     held: try WireWindow(json: try resumeFields.required("held"), field: "resume.held"))
        }
        if let invalid { throw .badArguments(.subscribe(self), invalid) }
    }
}

/// What a resuming client holds: the version it applied last, and the positions (at that
/// version) whose rows it holds with their content.
public struct WireResume: Hashable, Sendable {
    /// The last version the client applied.
    public var version: WireVersion
    /// Positions, at `version`, of rows the client holds with content.
    public var held: WireWindow

    /// Creates a resume.
    public init(version: WireVersion, held: WireWindow) {
        self.version = version
        self.held = held
    }
}
