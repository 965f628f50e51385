import ListDiff
import LiveListClient

/// A transport whose open connections can be cut at any moment, as a lost network cuts them:
/// for the tests and benchmarks of what a client does through disconnects (resends, resumes).
/// Connections go through `base`; ``drop()`` closes every one open now, and the client sees each
/// end as a connection lost.
public struct DroppingTransport: RemoteTransport {
    private final class Open: Sendable {
        /// The open connections' `close`, by number.
        let closers = Locked<(next: Int, closers: [Int: @Sendable () -> Void])>((0, [:]))
    }

    private let base: any RemoteTransport
    private let open = Open()

    /// A transport over `base`.
    public init(base: any RemoteTransport = WebSocketTransport()) {
        self.base = base
    }

    /// Opens a connection through the base transport, kept among those ``drop()`` cuts until it
    /// closes.
    public func connect(to url: String) async throws -> RemoteConnection {
        let connection = try await base.connect(to: url)
        let open = open
        let number = open.closers.withLock { state in
            defer { state.next += 1 }
            state.closers[state.next] = connection.close
            return state.next
        }
        let forget: @Sendable () -> Void = { _ = open.closers.withLock { $0.closers.removeValue(forKey: number) } }
        return RemoteConnection(frames: connection.frames, send: connection.send, close: {
            forget()
            connection.close()
        })
    }

    /// Cuts every connection open now; returns how many.
    @discardableResult
    public func drop() -> Int {
        let closers = open.closers.withLock { state in
            defer { state.closers = [:] }
            return Array(state.closers.values)
        }
        for close in closers { close() }
        return closers.count
    }
}
