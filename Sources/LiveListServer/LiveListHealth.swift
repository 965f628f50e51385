import LiveListWire

/// What a server says of itself: whether it can serve current lists (ready), why not, and what
/// it holds. ``LiveListServer/health()`` makes it; `GET …/health`, `…/health/ready` and the
/// metrics show it. The decision is ``assess(capture:failingQueries:shuttingDown:limits:at:)``,
/// a pure function tested without a server.
public struct LiveListHealth: Sendable {
    /// Why the server is not ready.
    public enum NotReady: Sendable, Equatable, CustomStringConvertible {
        /// It is shutting down: clients go elsewhere.
        case shuttingDown
        /// The engine's change capture has not started following yet.
        case captureStarting
        /// The change capture has been lost for `duration` (at least ``Limits/lag``), for `reason`.
        case captureLost(for: Duration, reason: String)
        /// The oldest change not applied yet waited `lag`, more than `limit`.
        case behind(lag: Duration, limit: Duration)
        /// `bytes` of the database's log are not applied yet, more than `limit`.
        case behindBytes(bytes: UInt64, limit: UInt64)
        /// Live queries of this published query failed and have not recovered (`count` of its
        /// argument sets); the server's log says why.
        case queryFailing(query: String, count: Int)
        /// A live query of this published query has left a change unsent to its subscribers for
        /// `duration`, longer than ``Limits/lag`` (its hub waits on a read that does not end).
        case queryStuck(query: String, for: Duration)

        public var description: String {
            switch self {
            case .shuttingDown: "shutting down"
            case .captureStarting: "change capture starting"
            case let .captureLost(duration, reason): "change capture lost for \(Self.seconds(duration)) s: \(reason)"
            case let .behind(lag, limit): "behind the database by \(Self.seconds(lag)) s (limit \(Self.seconds(limit)) s)"
            case let .behindBytes(bytes, limit): "behind the database by \(bytes) bytes (limit \(limit))"
            case let .queryFailing(query, count): "query \(query) failing (\(count) live \(count == 1 ? "query" : "queries"))"
            case let .queryStuck(query, duration): "query \(query) has not sent a change for \(Self.seconds(duration)) s"
            }
        }

        static func seconds(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            let tenths = (seconds * 10 + attoseconds / 100_000_000_000_000_000)
            return "\(tenths / 10).\(abs(tenths % 10))"
        }
    }

    /// How far behind a ready server may be.
    public struct Limits: Sendable, Equatable {
        /// The oldest change not applied may have waited this long (and the capture may be lost
        /// this long, as through a restart of the database).
        public var lag: Duration
        /// This many bytes of the database's log may wait.
        public var lagBytes: UInt64

        public init(lag: Duration, lagBytes: UInt64) {
            self.lag = lag
            self.lagBytes = lagBytes
        }
    }

    /// Why the server is not ready; empty when it is.
    public var notReady: [NotReady]
    /// The engine's change capture.
    public var capture: ChangeCaptureStatus
    /// Open live queries, subscriptions to them, and WebSocket connections.
    public var queries: Int
    public var subscriptions: Int
    public var connections: Int
    /// Changesets kept for clients that resume, and their bytes.
    public var keptChangesets: Int
    public var keptBytes: Int

    /// Whether it serves current lists.
    public var isReady: Bool { notReady.isEmpty }

    /// A health report (``LiveListServer/health()`` makes the server's).
    public init(notReady: [NotReady], capture: ChangeCaptureStatus, queries: Int, subscriptions: Int, connections: Int,
                keptChangesets: Int, keptBytes: Int) {
        self.notReady = notReady
        self.capture = capture
        self.queries = queries
        self.subscriptions = subscriptions
        self.connections = connections
        self.keptChangesets = keptChangesets
        self.keptBytes = keptBytes
    }

    /// Why a server whose capture is `capture`, with live queries failing (published names and
    /// how many of each) and live queries whose changes wait to be sent since an instant
    /// (`waiting`: published name and since when), is not ready at `now`.
    /// - Complexity: O(failing queries + waiting).
    public static func assess(capture: ChangeCaptureStatus, failingQueries: [String: Int],
                              waiting: [(query: String, since: ContinuousClock.Instant)] = [], shuttingDown: Bool, limits: Limits,
                              at now: ContinuousClock.Instant) -> [NotReady] {
        var reasons: [NotReady] = []
        if shuttingDown { reasons.append(.shuttingDown) }
        switch capture.state {
        case .following:
            break
        case .starting:
            reasons.append(.captureStarting)
        case let .lost(since, reason):
            let lost = since.duration(to: now)
            if lost >= limits.lag { reasons.append(.captureLost(for: lost, reason: reason)) }
        }
        if let lag = capture.lag, lag > limits.lag, !reasons.contains(where: { if case .captureLost = $0 { true } else { false } }) {
            reasons.append(.behind(lag: lag, limit: limits.lag))
        }
        if let bytes = capture.lagBytes, bytes > limits.lagBytes { reasons.append(.behindBytes(bytes: bytes, limit: limits.lagBytes)) }
        for (query, count) in failingQueries.sorted(by: { $0.key < $1.key }) { reasons.append(.queryFailing(query: query, count: count)) }
        var stuck: [String: Duration] = [:]
        for (query, since) in waiting where since.duration(to: now) > limits.lag {
            stuck[query] = max(stuck[query] ?? .zero, since.duration(to: now))
        }
        for (query, duration) in stuck.sorted(by: { $0.key < $1.key }) { reasons.append(.queryStuck(query: query, for: duration)) }
        return reasons
    }

    /// The JSON body of `GET …/health` and `…/health/ready`: `status` (`ok` or `unavailable`),
    /// `ready`, `reasons`, the counts, and the capture's state and lag where measured.
    public var json: String {
        var members: [JSONValue.Member] = [
            .init(key: "status", value: .string(isReady ? "ok" : "unavailable")), .init(key: "ready", value: .bool(isReady)),
            .init(key: "reasons", value: .array(notReady.map { .string($0.description) })),
            .init(key: "queries", value: .integer(Int64(queries))), .init(key: "subscriptions", value: .integer(Int64(subscriptions))),
            .init(key: "connections", value: .integer(Int64(connections))),
            .init(key: "keptChangesets", value: .integer(Int64(keptChangesets))), .init(key: "keptBytes", value: .integer(Int64(keptBytes))),
        ]
        let capture: String = switch self.capture.state {
        case .following: "following"
        case .starting: "starting"
        case .lost: "lost"
        }
        members.append(.init(key: "capture", value: .string(capture)))
        if let lag = self.capture.lag {
            let (seconds, attoseconds) = lag.components
            members.append(.init(key: "lagSeconds", value: .double(Double(seconds) + Double(attoseconds / 1_000_000_000_000) / 1_000_000)))
        }
        if let bytes = self.capture.lagBytes { members.append(.init(key: "lagBytes", value: .integer(Int64(clamping: bytes)))) }
        return JSONValue.object(members).serialized
    }
}
