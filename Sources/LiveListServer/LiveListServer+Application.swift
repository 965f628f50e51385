import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import HummingbirdWSCompression
import NIOCore
import ServiceLifecycle

extension LiveListServer: Service {
    /// Runs until the service group shuts down gracefully, then closes every live query, asks
    /// every client to reconnect elsewhere (``LiveListWire/WireCloseCode/goingAway``), and waits
    /// for them to go — at most ``Configuration/drainTimeout``, after which every connection the
    /// server's ``application(host:port:demoPage:onRunning:)`` accepted and that is still open is
    /// closed, whatever its peer does (one that stopped reading, one that never sent a request).
    public func run() async throws {
        try? await gracefulShutdown()
        await shutDown()
        await drain()
    }

    /// Waits for the WebSocket connections to close, at most ``Configuration/drainTimeout``, then
    /// closes every connection still open.
    func drain() async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: configuration.drainTimeout)
        while await registry.connectionCount > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        openChannels.closeAll()
    }

    /// A Hummingbird application serving this server's routes (`/live`, `/live/health`, the web
    /// client's modules) and, with `demoPage`, the inbox demo's page at `/`, on `host`:`port`
    /// (0: any free port), with the server as one of its services; `onRunning` receives the
    /// bound port. Its connections keep the server's limits: the first request head within
    /// ``Configuration/requestHeadTimeout``, an idle HTTP connection closed after
    /// ``Configuration/idleHTTPTimeout``, a WebSocket pinged every ``Configuration/pingInterval``
    /// and closed when it has not answered by the next ping, client messages of at most
    /// ``Configuration/maximumFrameBytes``; on shutdown the server closes its WebSockets (1001)
    /// before the HTTP server stops, and every connection within ``Configuration/drainTimeout``.
    public func application(host: String = "127.0.0.1", port: Int = 8080, demoPage: Bool = false,
                            onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: LiveListRequestContext.self)
        addRoutes(to: router)
        if demoPage {
            router.get("/") { _, _ -> Response in Self.webFileResponse("demo.html") }
        }
        // Frames the server writes stay at 16 KiB, what clients accept by default: a larger
        // message goes out as a text frame and continuation frames, joined by the receiver.
        let extensions: [WebSocketExtensionFactory] = configuration.perMessageDeflate ? [Self.perMessageDeflate] : []
        let webSocket = WebSocketServerConfiguration(
            maxFrameSize: configuration.maximumFrameBytes, extensions: extensions,
            autoPing: .enabled(timePeriod: configuration.pingInterval), closeTimeout: configuration.drainTimeout,
            // Checked by the server itself, which closes with 1007 (`MessageAssembly`).
            validateUTF8: false)
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: TimeAmount(configuration.idleHTTPTimeout)), ws: webSocket)
        let webSocketResponder = router.buildResponder()
        let channels = openChannels
        let headTimeout = TimeAmount(configuration.requestHeadTimeout)
        let server = HTTPServerBuilder { responder in
            GuardedChildChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration),
                requestHeadTimeout: headTimeout, channels: channels)
        }
        let inner = Application(router: router, server: server,
                                configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "livelist"),
                                onServerRunning: { [self] channel in
                                    await onRunning(channel.localAddress?.port ?? port)
                                    for line in await mutationEffectsReport() { logger.info("\(line)") }
                                }, logger: logger)
        return LiveListApplication(inner: inner, liveList: self)
    }

    /// permessage-deflate (RFC 7692) as the server offers it when
    /// ``Configuration/perMessageDeflate`` is on: every message compressed (a changeset is often
    /// under 256 bytes, the extension's default threshold), with context takeover.
    public static var perMessageDeflate: WebSocketExtensionFactory {
        .perMessageDeflate(maxDecompressedFrameSize: 1 << 16, minFrameSizeToCompress: 16)
    }
}
