/// How a remote live query reaches its server: a connection carrying the protocol's JSON text
/// frames. ``WebSocketTransport`` is the real one; tests and apps may bring their own.
public protocol RemoteTransport: Sendable {
    /// Opens a connection to `url`.
    func connect(to url: String) async throws -> RemoteConnection
}

/// An open connection: frames from the server, and a way to send frames to it.
public struct RemoteConnection: Sendable {
    /// The server's frames, in order; the sequence ends (or throws) when the connection does.
    public var frames: AsyncThrowingStream<String, any Error>
    /// Queues one frame for the server.
    public var send: @Sendable (String) -> Void
    /// Closes the connection.
    public var close: @Sendable () -> Void

    /// Creates a connection from its parts.
    public init(frames: AsyncThrowingStream<String, any Error>, send: @escaping @Sendable (String) -> Void,
                close: @escaping @Sendable () -> Void) {
        self.frames = frames
        self.send = send
        self.close = close
    }
}
