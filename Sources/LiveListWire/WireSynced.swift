/// The answer to a client's `sync`: the server looked for every commit made before the `sync`
/// and sent the subscription every change they made; `version` is the one the subscription holds
/// now. In JSON: `{"sub":1,"type":"synced","id":7,"version":"k3x9:42"}`.
public struct WireSynced: Hashable, Sendable {
    /// The subscription.
    public var sub: Int
    /// The `id` of the `sync` answered.
    public var id: Int
    /// The version the subscription holds.
    public var version: WireVersion

    /// Creates a synced message.
    public init(sub: Int, id: Int, version: WireVersion) {
        self.sub = sub
        self.id = id
        self.version = version
    }

    var members: [JSONValue.Member] {
        [.init(key: "type", value: "synced"), .init(key: "id", value: .integer(Int64(id))),
         .init(key: "version", value: .string(version.description))]
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = try fields.int("sub")
        id = try fields.int("id")
        version = try fields.version("version")
    }
}
