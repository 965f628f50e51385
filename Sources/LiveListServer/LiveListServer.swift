import Foundation
import Hummingbird
import HummingbirdWebSocket
import ListDiff
import LiveListWire
import LiveQueryCore
import Logging
import NIOCore
import NIOWebSocket
import Prometheus

/// Serves published live queries over WebSocket: clients subscribe by name with arguments and a
/// window, and receive the window's rows, then every commit's changeset — positioned, UIKit-safe,
/// O(changes) in size — with the rows of their window that it brings. One live query serves
/// every subscriber of the same (query, arguments). The protocol is `docs/PROTOCOL.md`.
///
/// Add its routes to your Hummingbird router and serve it with WebSocket upgrades. With a context
/// that keeps the connection's channel (``LiveListRequestContext``, or your own conforming to
/// ``ChannelWebSocketRequestContext``), a commit's frames are written to all the connections of an
/// event loop in one hop to that loop; with any other context, through a task per connection.
///
/// Over SQLite, LiveListServerSQLite gives the server a GRDB database
/// (`LiveListServer(database:queries:)`); over PostgreSQL, LiveListServerPostgres its engine.
///
/// ```swift
/// import GRDB
/// import Hummingbird
/// import HummingbirdWebSocket
/// import LiveListServer
/// import LiveListServerSQLite
///
/// func run(_ dbPool: DatabasePool) async throws {
///     let server = LiveListServer(database: dbPool, queries: [
///         PublishedQuery(name: "inbox", sql: "SELECT id, sender, subject FROM message ORDER BY sender"),
///     ])
///     let router = Router(context: LiveListRequestContext.self)
///     server.addRoutes(to: router)
///     let app = Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router),
///                           configuration: .init(address: .hostname("127.0.0.1", port: 8080)))
///     try await app.runService()
/// }
/// ```
public final class LiveListServer: Sendable {
    /// Limits and tuning.
    public struct Configuration: Sendable {
        /// The largest message a client may send, in bytes (its frames joined); a larger one
        /// closes the connection with ``LiveListWire/WireCloseCode/messageTooBig``.
        public var maximumFrameBytes = 65_536
        /// Subscriptions one connection may hold at once.
        public var maximumSubscriptionsPerConnection = 64
        /// The most rows a window may span.
        public var maximumWindow = 2_000
        /// Whether ``LiveListServer/application(host:port:onRunning:)`` accepts permessage-deflate
        /// (RFC 7692) from clients that offer it (browsers do): fewer bytes on the wire for some
        /// CPU per connection and message — each connection compresses its own copy of a
        /// changeset. In an app's own router, pass ``LiveListServer/perMessageDeflate`` to the
        /// WebSocket upgrade's extensions.
        public var perMessageDeflate = false
        /// Bytes queued for one connection before its subscriptions' pending changes are dropped
        /// and each gets a reset instead (slow clients cost bounded memory: this, plus one queued
        /// reset per subscription).
        public var outboundByteLimit = 4 << 20
        /// Changesets kept per live query for clients that resume: a client that missed fewer
        /// gets one `changes`, one that missed more a reset. 4,096 holds over a minute of
        /// commits at 50 a second.
        public var resumeBufferSize = 4_096
        /// Bytes those changesets may hold per live query: the oldest are dropped past it. A kept
        /// changeset holds its changes and the section counts of the list it leads from (shared
        /// with the next where unchanged), never rows: a one-row commit costs about 200 bytes.
        public var resumeBufferBytes = 64 << 20
        /// A changeset (or a composition of them) with more changes than this is sent as a reset.
        public var resetThreshold = 10_000
        /// Row contents kept per live query, read once for every window that shows them.
        public var payloadCacheRows = 50_000
        /// How long a live query stays open without subscribers (for clients that reconnect).
        public var idleTimeout: Duration = .seconds(30)
        /// How long a client that resumes with a version this server has not reached yet (another
        /// instance over the same PostgreSQL database showed it) waits for this server to reach it,
        /// before it is answered with the error `behind`: never with an older list.
        public var resumeWait: Duration = .seconds(10)
        /// How long after a failed read of rows the subscribers that lack them get their list again.
        public var readRetryDelay: Duration = .milliseconds(250)
        /// How long shutdown waits for clients to take their close (1001) and go, before it
        /// closes every connection still open (one that stopped reading, one that never sent a
        /// request). Also how long a closing WebSocket waits for its peer's close frame.
        public var drainTimeout: Duration = .seconds(5)
        /// How long a new connection has to send its first request head (an HTTP request or the
        /// WebSocket upgrade) before it is closed.
        public var requestHeadTimeout: Duration = .seconds(10)
        /// How long an HTTP connection (not a WebSocket) may stay idle between requests.
        public var idleHTTPTimeout: Duration = .seconds(30)
        /// How often a WebSocket is pinged; one whose pong has not come by the next ping is closed.
        public var pingInterval: Duration = .seconds(30)
        /// Mutations one connection may have waiting to run; past it, a `mutate` is refused with
        /// `mutationUnavailable` (nothing applied: the client sends it again later).
        public var maximumPendingMutations = 256
        /// Mutations the engine is given at once, from every connection; the next slot goes to
        /// the next connection in turn, so one client's queue delays another's mutation by about
        /// one mutation. 1 suits SQLite (one writer) and the PostgreSQL engine (one connection).
        public var maximumConcurrentMutations = 1
        /// Bearer tokens required before the upgrade (`nil`: none; parameters bound to claims
        /// then refuse every subscription).
        public var tokens: TokenVerification?
        /// Readiness (`GET …/health/ready`) turns 503 when the oldest change not applied has
        /// waited longer than this, or the engine's change capture has been lost this long (a
        /// database restart shorter than this keeps the server ready).
        public var maximumLag: Duration = .seconds(3)
        /// Readiness turns 503 when more of the database's log than this waits to be applied.
        public var maximumLagBytes: UInt64 = 64 << 20
        /// The Prometheus registry the server's metrics are kept in (`GET /metrics`); `nil`: one
        /// of its own.
        public var metricsRegistry: PrometheusCollectorRegistry?

        /// The defaults.
        public init() {}
    }

    /// Its limits and tuning.
    public let configuration: Configuration
    /// What opens the published queries.
    public let engine: any LiveQueryEngine
    let queries: [String: PublishedQuery]
    let mutations: [String: PublishedMutation]
    let registry: HubRegistry
    let loopWriters = LoopWriters()
    package let resumeGauge = ResumeGauge()
    /// Every connection the server's application accepted and that is still open.
    let openChannels = OpenChannels()
    let logger: Logger
    /// Its metrics (`GET /metrics`).
    public let metrics: LiveListMetrics
    /// The live queries failing now.
    let failures = FailingQueries()
    /// The published mutations' effects, as the engine states them (read once).
    let statedEffects = StatedEffects()
    /// Set once shutdown begins: readiness says so.
    private let shuttingDown = Locked(false)

    /// A server of `queries` opened by `engine`: `SQLiteEngine` (of LiveListServerSQLite, which
    /// also gives `init(database:queries:options:configuration:logger:)`), `PostgresEngine` (of
    /// `LiveListServerPostgres`, whose versions every server over the same database shares), or an
    /// app's own.
    /// `mutations` are what clients may change (``PublishedMutation``); the engine runs them.
    public init(engine: any LiveQueryEngine, queries: [PublishedQuery], mutations: [PublishedMutation] = [],
                configuration: Configuration = Configuration(), logger: Logger = Logger(label: "livelist.server")) {
        self.engine = engine
        self.queries = Dictionary(queries.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.mutations = Dictionary(mutations.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.configuration = configuration
        self.logger = logger
        registry = HubRegistry(mutationSlots: configuration.maximumConcurrentMutations)
        metrics = LiveListMetrics(registry: configuration.metricsRegistry ?? PrometheusCollectorRegistry())
    }

    /// What each published mutation's statements do, as the engine states them for clients (a
    /// reset's `effects`, from which clients show a mutation's pending rows without the app
    /// describing them), or why it states none: the start-up report. Read from the database once,
    /// on the first call or the first subscription.
    public func mutationEffects() async -> [String: MutationEffects] {
        await statedEffects.catalog(engine: engine, mutations: mutations)
    }

    /// One line per published mutation, in name order: the tables on which clients may show its
    /// pending rows without the app describing them, with the values it sets that the engine
    /// cannot state, or why clients show none. The server logs them
    /// when it starts; `livelist serve` prints them.
    public func mutationEffectsReport() async -> [String] {
        await mutationEffects().sorted { $0.key < $1.key }.map { name, effects in
            switch effects {
            case let .stated(statements):
                let tables = statements.reduce(into: [String]()) { if !$0.contains($1.table) { $0.append($1.table) } }
                var unstated: [String] = []
                for statement in statements {
                    let values: [String: RowOperand?] = switch statement {
                    case let .insert(_, values): values
                    case let .update(_, _, set): set
                    case .delete: [:]
                    }
                    for (column, operand) in values.sorted(by: { $0.key < $1.key }) where operand == nil && !unstated.contains(column) {
                        unstated.append(column)
                    }
                }
                let caveat = unstated.isEmpty ? "" : "; values not stated: \(unstated.joined(separator: ", ")) (a list showing one derives nothing)"
                return "mutation \(name): stated on \(tables.joined(separator: ", "))\(caveat)"
            case let .unstated(reason):
                return "mutation \(name): no derived pending rows (\(reason))"
            }
        }
    }

    /// Adds `GET path` (the WebSocket endpoint), the health checks (`GET path/health`,
    /// `path/health/live` and `path/health/ready`, see ``health()``), `GET /metrics` (Prometheus'
    /// text format, see ``LiveListMetrics``), and the web client's modules — `GET path/livelist.js`,
    /// `path/livelist-view.js` and the modules they import, `path/livelist/*.js` — to `router`. With
    /// ``Configuration/tokens``, an upgrade without a valid token is refused (HTTP 400, the WebSocket
    /// layer's answer to a refused upgrade; the same request without upgrade headers gets 401).
    public func addRoutes<Context: WebSocketRequestContext>(to router: Router<Context>, path: String = "live") {
        router.ws(RouterPath(path)) { request, _ in
            guard self.configuration.tokens != nil else { return .upgrade([:]) }
            do {
                _ = try await self.claims(of: request)
                return .upgrade([:])
            } catch {
                throw HTTPError(.unauthorized, message: "\(error)")
            }
        } onUpgrade: { inbound, outbound, context in
            // Verified before the upgrade; read again here, where the connection starts.
            let claims = try? await self.claims(of: context.request)
            // Straight to the channel unless an extension must see every frame.
            let offersDeflate = context.request.headers[.secWebSocketExtensions]?.contains("permessage-deflate") ?? false
            let channel = (context.requestContext as? any ChannelWebSocketRequestContext)?.channel
            await self.serve(inbound: inbound, outbound: outbound, claims: claims, logger: context.logger,
                             channel: self.configuration.perMessageDeflate && offersDeflate ? nil : channel)
        }
        for name in WebFiles.modules {
            router.get(RouterPath(path + "/" + name)) { _, _ -> Response in Self.webFileResponse(name) }
        }
        // Always 200 while the process serves: what it holds, whether it is ready, and why not.
        router.get(RouterPath(path + "/health")) { _, _ -> Response in
            Self.json(await self.health().json, status: .ok)
        }
        // Liveness: the process serves requests.
        router.get(RouterPath(path + "/health/live")) { _, _ -> Response in
            Self.json("{\"status\":\"ok\"}", status: .ok)
        }
        // Readiness: 503 while it cannot serve current lists.
        router.get(RouterPath(path + "/health/ready")) { _, _ -> Response in
            let health = await self.health()
            return Self.json(health.json, status: health.isReady ? .ok : .serviceUnavailable)
        }
        router.get("/metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: await self.metricsText())))
        }
    }

    /// What the server says of itself now: ready or not and why (shutting down; the engine's
    /// change capture lost or behind by more than ``Configuration/maximumLag`` or
    /// ``Configuration/maximumLagBytes``; published queries whose live queries failed and have
    /// not recovered, or hold a change unsent for longer than ``Configuration/maximumLag``), the
    /// capture's lag, and what it holds.
    /// - Complexity: O(open live queries); the engine's figures are those it measured last (no
    ///   round trip to the database).
    public func health() async -> LiveListHealth {
        let capture = await engine.changeCapture()
        // No hop to the registry: on a busy server every hop waits for a thread of the pool.
        let figures = registry.figures
        let kept = resumeGauge.current
        let limits = LiveListHealth.Limits(lag: configuration.maximumLag, lagBytes: configuration.maximumLagBytes)
        let notReady = LiveListHealth.assess(capture: capture, failingQueries: failures.byQuery, waiting: figures.waiting,
                                             shuttingDown: shuttingDown.withLock { $0 }, limits: limits, at: .now)
        return LiveListHealth(notReady: notReady, capture: capture, queries: figures.queries, subscriptions: figures.subscriptions,
                              connections: figures.connections, keptChangesets: kept.changesets, keptBytes: kept.bytes)
    }

    /// The metrics in Prometheus' text format, the gauges read now.
    public func metricsText() async -> [UInt8] {
        metrics.record(await health(), mutationDepth: registry.mutationScheduler.depth)
        return metrics.emit()
    }

    private static func json(_ body: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// A file of the web client (`livelist.js`, `livelist-view.js`, a module they import such as
    /// `livelist/connection.js`, or `demo.html`, the inbox demo's page) as a response; 404 for
    /// another name.
    public static func webFileResponse(_ name: String) -> Response {
        guard let file = WebFiles.files[name] else { return Response(status: .notFound) }
        return Response(status: .ok, headers: [.contentType: file.contentType, .cacheControl: "no-cache"],
                        body: ResponseBody(byteBuffer: file.body))
    }

    /// The verified claims of the request's bearer token (`nil` when tokens are not required).
    func claims(of request: Request) async throws(TokenRejection) -> LiveListClaims? {
        guard let tokens = configuration.tokens else { return nil }
        var token: String?
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") {
            token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        } else {
            token = request.uri.queryParameters["access_token"].map(String.init)
        }
        guard let token, !token.isEmpty else { throw TokenRejection(reason: "no bearer token") }
        return try await tokens.verify(token)
    }

    /// Serves one WebSocket connection until it closes (for servers that upgrade by hand), with
    /// the verified `claims` of its token; the connection closes when the token expires.
    public func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, claims: LiveListClaims?, logger: Logger) async {
        await serve(inbound: inbound, outbound: outbound, claims: claims, logger: logger, channel: nil)
    }

    /// Serves one connection; with `channel`, frames are written straight to it (`ChannelWriter`).
    func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, claims: LiveListClaims?, logger: Logger,
               channel: (any Channel)?) async {
        let connection = ClientConnection(server: self, claims: claims, logger: logger)
        if let channel {
            do {
                try await ChannelWriter.start(channel: channel, outbox: connection.outbox, loop: loopWriters.writer(for: channel.eventLoop),
                                               metrics: metrics)
            } catch {
                logger.debug("frames go through the WebSocket writer: \(error)")
            }
        }
        let writer = Task { await self.write(connection.outbox, to: outbound) }
        let expiry = claims.map { claims in
            Task {
                try? await Task.sleep(for: .seconds(max(0, claims.expiration.timeIntervalSinceNow)))
                if !Task.isCancelled { connection.outbox.close(code: WireCloseCode.tokenExpired.rawValue, reason: "the token expired") }
            }
        }
        defer { expiry?.cancel() }
        guard await registry.register(connection.outbox) else {
            connection.outbox.close(code: WireCloseCode.goingAway.rawValue, reason: "the server is shutting down")
            await writer.value
            return
        }
        do {
            var assembly = MessageAssembly(maximumBytes: configuration.maximumFrameBytes)
            reading: for try await frame in inbound {
                let opcode: MessageAssembly.Opcode = switch frame.opcode {
                case .text: .text
                case .binary: .binary
                case .continuation: .continuation
                }
                switch assembly.receive(opcode, fin: frame.fin, data: frame.data.readableBytesView) {
                case .pending:
                    continue
                case let .message(bytes):
                    if let (code, reason) = await connection.receive(bytes) {
                        connection.outbox.close(code: code.rawValue, reason: reason)
                        break reading
                    }
                case let .close(code, reason):
                    connection.outbox.close(code: code.rawValue, reason: reason)
                    break reading
                }
            }
        } catch {
            // The socket failed or the WebSocket layer refused a frame (it closes on its own).
            logger.debug("connection ended: \(error)")
        }
        await connection.closeAll()
        await registry.unregister(connection.outbox)
        // A close asked for above is kept; otherwise the socket closes normally.
        connection.outbox.close(code: 1000, reason: "")
        await writer.value
    }

    /// The WebSocket frame size the server writes (hummingbird-websocket's default, what clients accept).
    static let webSocketFrameSize = 1 << 14

    /// Counts frames handed to a connection's socket, and their bytes.
    func countSent(_ frames: [ByteBuffer]) {
        guard !frames.isEmpty else { return }
        metrics.framesSent.increment(by: frames.count)
        metrics.bytesSent.increment(by: frames.reduce(0) { $0 + $1.readableBytes })
    }

    private func write(_ outbox: Outbox, to outbound: WebSocketOutboundWriter) async {
        do {
            while true {
                switch await outbox.next() {
                case let .write(frames):
                    countSent(frames)
                    for frame in frames {
                        if frame.readableBytes <= Self.webSocketFrameSize {
                            // The shared bytes as they are: no copy per connection.
                            try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: frame)))
                        } else {
                            // Split into frames of 16 KiB, as the direct path does (the WebSocket
                            // layer would split at its frame limit, the largest client frame
                            // accepted): a message is never too big to send.
                            try await outbound.withTextMessageWriter { writer in
                                var rest = frame
                                while rest.readableBytes > 0, let slice = rest.readSlice(length: min(Self.webSocketFrameSize, rest.readableBytes)) {
                                    try await writer(slice)
                                }
                            }
                        }
                    }
                case let .close(code, reason):
                    try await outbound.close(WebSocketErrorCode(codeNumber: Int(code)), reason: String(reason.utf8.prefix(120)) ?? "")
                    return
                case .finished:
                    return
                }
            }
        } catch {
            outbox.finish()
        }
    }

    /// Opens the shared live query of `key`.
    func openHub(_ key: HubKey, query: PublishedQuery) async throws -> Hub {
        let live = try await engine.open(query, arguments: key.arguments)
        // The versions' name: what the query shows, the same on every server that publishes it.
        let definition = (try? query.sql(for: key.arguments))?.summary ?? "request"
        let registry = registry
        let hubBox = HubBox()
        let observer = HubObserver(query: key.name, metrics: metrics, failures: failures)
        let hub = Hub(key: key, query: live, definition: definition, configuration: configuration, writers: loopWriters, gauge: resumeGauge,
                       observer: observer, logger: logger) {
            Task { if let hub = hubBox.hub { await registry.drop(hub) } }
        }
        hubBox.hub = hub
        return hub
    }

    /// Closes every live query; connections end as their clients go. Readiness says so from now on.
    public func shutDown() async {
        shuttingDown.withLock { $0 = true }
        await registry.shutDown()
    }
}

/// The hub, for its own termination callback, set right after the hub is made.
final class HubBox: Sendable {
    private let stored = Locked<Hub?>(nil)
    var hub: Hub? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
