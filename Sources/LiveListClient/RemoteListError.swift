import LiveListWire

/// Why a remote list could not follow its server.
public enum RemoteListError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A message does not start at the version the client holds (a message was lost); the
    /// client subscribes again, resuming from its version.
    case versionGap(expected: WireVersion?, received: WireVersion)
    /// A message contradicts the list (an index out of range, a count below zero): the server
    /// or the connection is broken; the client starts over with a reset.
    case inconsistent(String)
    /// The server reported an error for the subscription.
    case server(WireError)
    /// The connection failed or closed.
    case connection(String)
    /// A frame from the server is not a message of the protocol.
    case malformed(WireDecodingError)

    public var description: String {
        switch self {
        case let .versionGap(expected, received): "changes from \(received), but the list is at \(expected.map(\.description) ?? "no version")"
        case let .inconsistent(reason): "inconsistent message: \(reason)"
        case let .server(error): "server: \(error)"
        case let .connection(reason): "connection: \(reason)"
        case let .malformed(error): "malformed message: \(error)"
        }
    }
}
