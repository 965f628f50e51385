import Hummingbird
import HummingbirdWebSocket
import HummingbirdWSCompression
import ServiceLifecycle

extension LiveListServer: Service {
    /// Runs until the service group shuts down gracefully, then closes every live query and asks
    /// every client to reconnect elsewhere (``LiveListWire/WireCloseCode/goingAway``).
    public func run() async throws {
        try? await gracefulShutdown()
        await shutDown()
    }

    /// A Hummingbird application serving this server's routes (`/live`, `/live/health`, the web
    /// client's modules) and, with `demoPage`, the inbox demo's page at `/`, on `host`:`port`
    /// (0: any free port), with the server as one of its services; `onRunning` receives the
    /// bound port.
    public func application(host: String = "127.0.0.1", port: Int = 8080, demoPage: Bool = false,
                            onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: LiveListRequestContext.self)
        addRoutes(to: router)
        if demoPage {
            router.get("/") { _, _ -> Response in Self.webFileResponse("demo.html") }
        }
        // WebSocket's frames stay at 16 KiB, what clients accept by default: larger messages are
        // split into frames and joined again by the receiver.
        let extensions: [WebSocketExtensionFactory] = configuration.perMessageDeflate ? [Self.perMessageDeflate] : []
        return Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: .init(extensions: extensions))),
                           configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "livelist"),
                           services: [self],
                           onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }

    /// permessage-deflate (RFC 7692) as the server offers it when
    /// ``Configuration/perMessageDeflate`` is on: every message compressed (a changeset is often
    /// under 256 bytes, the extension's default threshold), with context takeover.
    public static var perMessageDeflate: WebSocketExtensionFactory {
        .perMessageDeflate(maxDecompressedFrameSize: 1 << 16, minFrameSizeToCompress: 16)
    }
}
