import HTTPTypes
import HummingbirdWSClient
import HummingbirdWSCompression
import Logging

/// The protocol over WebSocket (`ws://` or `wss://`), with hummingbird-websocket's client.
public struct WebSocketTransport: RemoteTransport {
    /// The largest message accepted from the server.
    public var maximumFrameBytes: Int
    /// The frames read ahead of the list: past them the socket is not read until the list takes
    /// one, so a client that cannot keep up is seen (and reset) by the server instead of holding
    /// an unbounded backlog.
    public var inboundCapacity: Int
    /// Whether to offer permessage-deflate (RFC 7692); used when the server accepts it.
    public var perMessageDeflate: Bool
    /// The bearer token to send, asked for at every connection (so a refreshed one is used).
    public var token: (@Sendable () async throws -> String?)?
    /// How often the client pings the server. A connection whose pong has not come by the next
    /// ping is dropped, and the list reconnects: a server that hangs, or a network that went away
    /// without a word (a connection that only receives never notices on its own). `nil`: no pings.
    public var pingInterval: Duration?
    /// How long the opening handshake may take: an attempt not answered by then fails (and the
    /// list tries again, with backoff) instead of waiting for a server that does not answer.
    public var connectTimeout: Duration
    let logger: Logger

    /// A transport accepting messages of up to `maximumFrameBytes`, sending `token` (when given)
    /// as `Authorization: Bearer` on every connection, pinging the server every `pingInterval`
    /// and giving up a handshake not answered within `connectTimeout`.
    public init(maximumFrameBytes: Int = 64 << 20, inboundCapacity: Int = 64, perMessageDeflate: Bool = false,
                token: (@Sendable () async throws -> String?)? = nil, pingInterval: Duration? = .seconds(10),
                connectTimeout: Duration = .seconds(10), logger: Logger = Logger(label: "livelist.client")) {
        self.maximumFrameBytes = maximumFrameBytes
        self.perMessageDeflate = perMessageDeflate
        self.inboundCapacity = inboundCapacity
        self.token = token
        self.pingInterval = pingInterval
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// Starts connecting to `url` and returns at once; frames flow once the connection is open, and
    /// a failure to connect ends ``RemoteConnection/frames`` with the error.
    public func connect(to url: String) async throws -> RemoteConnection {
        let incoming = FrameQueue(capacity: inboundCapacity)
        let frames = AsyncThrowingStream<String, any Error>(unfolding: { try await incoming.next() })
        let (outgoing, queue) = AsyncStream<String>.makeStream()
        let maximumFrameBytes = maximumFrameBytes
        let perMessageDeflate = perMessageDeflate
        let (pingInterval, connectTimeout) = (pingInterval, connectTimeout)
        let logger = logger
        var headers = HTTPFields()
        if let token, let value = try await token() { headers[.authorization] = "Bearer \(value)" }
        let handshake = Handshake()
        let task = Task { [headers] in
            do {
                let extensions: [WebSocketExtensionFactory] = perMessageDeflate ? [.perMessageDeflate(maxDecompressedFrameSize: 1 << 20, minFrameSizeToCompress: 16)] : []
                let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers, extensions: extensions,
                                                                 autoPing: pingInterval.map { .enabled(timePeriod: $0) } ?? .disabled)
                let closeFrame = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                    // An attempt given up (its handshake took too long, or the list let it go)
                    // that the server answers late: closed at once.
                    guard handshake.open() else { return }
                    let writer = Task {
                        for await text in outgoing { try await outbound.write(.text(text)) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: maximumFrameBytes) {
                        if case let .text(text) = message { await incoming.push(text) }
                    }
                }
                if let closeFrame, closeFrame.closeCode != .normalClosure {
                    incoming.finish(throwing: RemoteListError.connection("closed by the server: \(closeFrame.closeCode) \(closeFrame.reason ?? "")"))
                } else {
                    incoming.finish()
                }
            } catch {
                incoming.finish(throwing: RemoteListError.connection("\(error)"))
            }
        }
        let watchdog = Task {
            try await Task.sleep(for: connectTimeout)
            if handshake.giveUp() {
                incoming.finish(throwing: RemoteListError.connection("no answer to the opening handshake within \(connectTimeout)"))
            }
        }
        return RemoteConnection(frames: frames, send: { queue.yield($0) }, close: {
            _ = handshake.giveUp()
            watchdog.cancel()
            queue.finish()
            incoming.finish()
            task.cancel()
        })
    }
}
