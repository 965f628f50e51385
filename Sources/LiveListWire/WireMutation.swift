/// A client's request to run a published mutation. In JSON:
/// `{"type":"mutate","client":"6f1c…","id":7,"name":"archive","arguments":{"id":42}}`.
///
/// `client` names the client (an installation of an app, say: a random string it keeps), and
/// `id` numbers its mutations from 1 with no gap. The server applies each (client, id) once:
/// a mutation sent again — after a lost connection, to this server or another over the same
/// database — is answered with its first outcome and changes nothing.
public struct WireMutation: Hashable, Sendable {
    /// The client's name for itself, 1 to 128 bytes of UTF-8, kept across launches.
    public var client: String
    /// The mutation's number among the client's, from 1 (1 … 2⁵³).
    public var id: Int64
    /// The published mutation's name.
    public var name: String
    /// Its arguments by parameter name.
    public var arguments: [String: WireValue]

    /// The largest mutation number (JSON numbers are exact to 2⁵³ in every client).
    public static let maximumID: Int64 = 1 << 53

    /// Creates a mutation request.
    public init(client: String, id: Int64, name: String, arguments: [String: WireValue] = [:]) {
        self.client = client
        self.id = id
        self.name = name
        self.arguments = arguments
    }

    var json: JSONValue {
        .object([
            .init(key: "type", value: "mutate"), .init(key: "client", value: .string(client)), .init(key: "id", value: .integer(id)),
            .init(key: "name", value: .string(name)), .init(key: "arguments", value: WireSubscription.json(arguments)),
        ])
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        client = try fields.string("client", maximumLength: 128)
        guard !client.isEmpty else { throw .invalidField("client", "expected 1 to 128 bytes of UTF-8") }
        // The number as the protocol writes integers, without fraction or exponent; the same
        // number written otherwise (`16.0`, `1.6e1`) names the mutation, which is refused.
        var misspelled: String?
        switch try fields.required("id") {
        case let .integer(id) where (1...Self.maximumID).contains(id):
            self.id = id
        case let .double(number) where number == number.rounded() && number >= 1 && number <= Double(Self.maximumID):
            self.id = Int64(number)
            misspelled = "field \"id\": \(Int64(number)) must be written as an integer, without fraction or exponent"
        default:
            throw .invalidField("id", "expected an integer in 1...\(Self.maximumID)")
        }
        name = try fields.string("name", maximumLength: 256)
        let (arguments, invalid) = try WireSubscription.arguments(fields)
        self.arguments = arguments
        if let reason = misspelled ?? invalid { throw .badArguments(.mutate(WireMutation(client: client, id: id, name: name)), reason) }
    }
}

/// The server's answer to a `mutate` that was applied (now or when first sent). In JSON:
/// `{"type":"mutated","client":"6f1c…","id":7,"versions":{"1":"k3x9:42"},"duplicate":false}`.
///
/// It follows, on the connection that sent the mutation, every change of that connection's
/// subscriptions through the mutation's commit: a client that has `mutated` holds the commit in
/// every list of that connection, at the versions given.
public struct WireMutated: Hashable, Sendable {
    /// The client, as the mutation named it.
    public var client: String
    /// The mutation's number.
    public var id: Int64
    /// Per subscription of the connection, the version it holds now, which includes the
    /// mutation's commit.
    public var versions: [Int: WireVersion]
    /// Whether the mutation had been applied before (this is a resend): nothing changed now.
    public var duplicate: Bool

    /// Creates a mutated message.
    public init(client: String, id: Int64, versions: [Int: WireVersion], duplicate: Bool) {
        self.client = client
        self.id = id
        self.versions = versions
        self.duplicate = duplicate
    }

    var members: [JSONValue.Member] {
        [.init(key: "type", value: "mutated"), .init(key: "client", value: .string(client)), .init(key: "id", value: .integer(id)),
         .init(key: "versions", value: .object(versions.sorted { $0.key < $1.key }.map { .init(key: String($0.key), value: .string($0.value.description)) })),
         .init(key: "duplicate", value: .bool(duplicate))]
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        client = try fields.string("client", maximumLength: 128)
        guard case let .integer(id) = try fields.required("id") else { throw .invalidField("id", "expected an integer") }
        self.id = id
        var versions: [Int: WireVersion] = [:]
        guard case let .object(members) = try fields.required("versions") else { throw .invalidField("versions", "expected an object") }
        for member in members {
            guard let sub = Int(member.key), sub >= 0, case let .string(text) = member.value, let version = WireVersion(text) else {
                throw .invalidField("versions", "expected subscription numbers and versions")
            }
            versions[sub] = version
        }
        self.versions = versions
        guard case let .bool(duplicate) = try fields.required("duplicate") else { throw .invalidField("duplicate", "expected a boolean") }
        self.duplicate = duplicate
    }
}
