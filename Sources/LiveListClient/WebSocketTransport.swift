import HummingbirdWSClient
import Logging

/// The protocol over WebSocket (`ws://` or `wss://`), with hummingbird-websocket's client.
public struct WebSocketTransport: RemoteTransport {
    /// The largest frame accepted from the server.
    public var maximumFrameBytes: Int
    let logger: Logger

    /// A transport accepting frames of up to `maximumFrameBytes`.
    public init(maximumFrameBytes: Int = 64 << 20, logger: Logger = Logger(label: "livelist.client")) {
        self.maximumFrameBytes = maximumFrameBytes
        self.logger = logger
    }

    /// Starts connecting to `url` and returns at once; frames flow once the connection is open, and
    /// a failure to connect ends ``RemoteConnection/frames`` with the error.
    public func connect(to url: String) async throws -> RemoteConnection {
        let (frames, incoming) = AsyncThrowingStream<String, any Error>.makeStream()
        let (outgoing, queue) = AsyncStream<String>.makeStream()
        let maximumFrameBytes = maximumFrameBytes
        let logger = logger
        let task = Task {
            do {
                let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
                let closeFrame = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                    let writer = Task {
                        for await text in outgoing { try await outbound.write(.text(text)) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: maximumFrameBytes) {
                        if case let .text(text) = message { incoming.yield(text) }
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
            task.cancel()
        })
    }
}
