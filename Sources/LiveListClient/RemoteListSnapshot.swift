import Foundation
import LiveListWire

/// A remote list as the client held it, to show again before the server is reached (an app
/// launched offline): the query and its arguments, and the list — its version, sections and
/// counts, the window and the rows held with their values — written as the protocol's own
/// `reset`. Bounded by the window: a snapshot of a million-row list holds its counts and the rows
/// of its window only.
///
/// ``RemoteLiveQuery/snapshot()`` makes one, ``RemoteLiveQuery/restore(_:)`` shows it;
/// ``encoded()`` and ``init(query:arguments:list:savedAt:)`` keep it anywhere (LiveListOffline
/// keeps it in a SQLite file).
public struct RemoteListSnapshot: Sendable, Equatable {
    /// The published query's name.
    public var query: String
    /// Its arguments.
    public var arguments: [String: WireValue]
    /// The list, as a `reset` at the version it was held at.
    public var list: WireReset
    /// When the list was held.
    public var savedAt: Date

    /// A snapshot of `list` for `query` with `arguments`.
    public init(query: String, arguments: [String: WireValue], list: WireReset, savedAt: Date) {
        self.query = query
        self.arguments = arguments
        self.list = list
        self.savedAt = savedAt
    }

    /// The snapshot as two texts of the protocol's JSON: the arguments (an `arguments` message)
    /// and the list (a `reset` message).
    ///
    /// - Complexity: O(w) for w rows held.
    public func encoded() -> (arguments: String, list: String) {
        (ClientMessage.arguments(sub: 0, arguments).encoded(), ServerMessage.reset(list).encoded())
    }

    /// Reads a snapshot ``encoded()`` wrote; throws `WireDecodingError` when either text is not
    /// what it wrote (a damaged file): nothing is shown from it.
    public init(query: String, arguments: String, list: String, savedAt: Date) throws(WireDecodingError) {
        guard case let .arguments(_, decodedArguments) = try ClientMessage.decode(Array(arguments.utf8)) else {
            throw .invalidField("arguments", "expected an arguments message")
        }
        guard case let .reset(reset) = try ServerMessage.decode(Array(list.utf8)) else {
            throw .invalidField("type", "expected a reset")
        }
        self.init(query: query, arguments: decodedArguments, list: reset, savedAt: savedAt)
    }
}
