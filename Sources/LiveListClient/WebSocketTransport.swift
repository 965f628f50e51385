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
    let logger: Logger

    /// A transport accepting messages of up to `maximumFrameBytes`, sending `token` (when given)
    /// as `Authorization: Bearer` on every connection.
    public init(maximumFrameBytes: Int = 64 << 20, inboundCapacity: Int = 64, perMessageDeflate: Bool = false,
                token: (@Sendable () async throws -> String?)? = nil, logger: Logger = Logger(label: "livelist.client")) {
        self.maximumFrameBytes = maximumFrameBytes
        self.perMessageDeflate = perMessageDeflate
        self.inboundCapacity = inboundCapacity
        self.token = token
        self.logger = logger
    }

    /// Starts connecting to `url` and returns at once; frames flow once the connection is open, and
    /// a failure to connect ends ``RemoteConnection/frames`` with the error.
    public func connect(to url: String) async throws -> RemoteConnection {
        let incoming = _FrameQueue(capacity: inboundCapacity)
        let frames = AsyncThrowingStream<String, any Error>(unfolding: { try await incoming.next() })
        let (outgoing, queue) = AsyncStream<String>.makeStream()
        let maximumFrameBytes = maximumFrameBytes
        let perMessageDeflate = perMessageDeflate
        let logger = logger
        var headers = HTTPFields()
        if let token, let value = try await token() { headers[.authorization] = "Bearer \(value)" }
        let task = Task { [headers] in
            do {
                let extensions: [WebSocketExtensionFactory] = perMessageDeflate ? [.perMessageDeflate(maxDecompressedFrameSize: 1 << 20, minFrameSizeToCompress: 16)] : []
                let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers, extensions: extensions)
                let closeFrame = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
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
        return RemoteConnection(frames: frames, send: { queue.yield($0) }, close: {
            queue.finish()
            incoming.finish()
            task.cancel()
        })
    }
}
