import Foundation
import ListDiff
import LiveListWire
import NIOCore
import NIOPosix

/// What the parent of `pg.mixed` tells its load generator: the connections to open.
struct MixedSpecification: Codable {
    struct Subscriber: Codable {
        var url: String
        /// The published query's name (the figures are also given per query).
        var query: String
        /// The subscribe message, as sent.
        var subscribe: String
        /// The tables the query reads: a commit to one of them must reach the subscriber.
        var tables: [String]
    }

    /// A connection that opens a live query before the subscribers come, and holds it until its
    /// list has the SELECT's count: a first screen completed while subscribers listen is a
    /// change of the whole result, a reset to each of them.
    struct Warmer: Codable {
        var url: String
        var subscribe: String
        var count: Int
    }

    var warmers: [Warmer]
    var subscribers: [Subscriber]
}

/// What the parent of `pg.mixed` tells its load generator once the writers stopped: every commit,
/// when it was sent and where it ends in the WAL.
struct MixedCommits: Codable {
    struct Commit: Codable {
        /// The end of its commit record (the position a version names), from logical decoding.
        var end: UInt64
        /// Wall-clock seconds since 1970 when the writer sent COMMIT.
        var sent: Double
        /// When the writer had COMMIT's answer.
        var acknowledged: Double
        var tables: [String]
    }

    var commits: [Commit]
    /// When the last writer stopped: a subscriber has until `stopped + drainSeconds` to catch up.
    var stopped: Double
    var drainSeconds: Double
}

/// One connection of `pg.mixed`'s load generator: the versions it received and when, parsed in
/// place (`to`, `version`, `at`), the resets and errors, the order; a warmer also counts the rows
/// of its list (decoding each message whole: it stops before the measured run).
///
final class MixedRecorder: FrameRecording {
    struct Received {
        var sequence: UInt64
        /// Seconds since 1970 at receipt.
        var time: Double
        /// The message's `at` (microseconds since 1970, the server's clock), when it has one.
        var at: Int64?
    }

    struct State {
        var subscribed = false
        var initialSequence: UInt64 = 0
        var received: [Received] = []
        /// The highest version received (its sequence).
        var highest: UInt64 = 0
        var heldVersion: [UInt8] = []
        var resets = 0
        /// `changes` whose `from` is not the version held: a gap the protocol forbids.
        var gaps = 0
        /// `changes` without changes: a commit that touched the query's tables but not its result.
        var empty = 0
        var errors = 0
        var firstError: String?
        var bytes = 0
        var frames = 0
        /// A warmer's row count (-1 before its first reset).
        var count = -1
    }

    private let countsRows: Bool
    private let current = Locked(State())

    init(countsRows: Bool) { self.countsRows = countsRows }

    var state: State { current.withLock { $0 } }
    var isSubscribed: Bool { current.withLock { $0.subscribed } }
    var highest: UInt64 { current.withLock { $0.highest } }

    func note(_ utf8: [UInt8], at time: Double) {
        if countsRows { countRows(utf8) }
        if FrameScan.find(Self.errorType, in: utf8) != nil {
            let text = String(decoding: utf8.prefix(400), as: UTF8.self)
            current.withLock { current in
                current.errors += 1
                if current.firstError == nil { current.firstError = text }
            }
            return
        }
        let from = FrameScan.field(Self.fromField, in: utf8), to = FrameScan.field(Self.toField, in: utf8)
        let version = from == nil ? FrameScan.field(Self.versionField, in: utf8) : nil
        let isReset = version != nil && FrameScan.find(Self.resetType, in: utf8) != nil
        let at = from == nil ? nil : Self.integer(after: Self.atField, in: utf8)
        current.withLock { current in
            if let version, isReset {
                let sequence = Self.sequence(utf8[version]) ?? 0
                if current.subscribed {
                    current.resets += 1
                    current.bytes += utf8.count
                    current.frames += 1
                    current.received.append(Received(sequence: sequence, time: time, at: nil))
                    current.highest = max(current.highest, sequence)
                } else {
                    current.subscribed = true
                    current.initialSequence = sequence
                }
                current.heldVersion = Array(utf8[version])
            } else if let from, let to {
                if !utf8[from].elementsEqual(current.heldVersion) { current.gaps += 1 }
                // No list at all (every change list, and rows, is an array; versions and `at` are not).
                if !utf8.contains(UInt8(ascii: "[")) { current.empty += 1 }
                current.heldVersion = Array(utf8[to])
                current.bytes += utf8.count
                current.frames += 1
                if let sequence = Self.sequence(utf8[to]) {
                    current.received.append(Received(sequence: sequence, time: time, at: at))
                    current.highest = max(current.highest, sequence)
                }
            }
        }
    }

    /// A warmer's count: a reset's sections, then each change's inserts less its deletes (which
    /// include the rows of inserted and deleted sections; moves keep the count).
    private func countRows(_ utf8: [UInt8]) {
        guard let message = try? ServerMessage.decode(utf8) else { return }
        current.withLock { current in
            switch message {
            case let .reset(reset): current.count = reset.sections.reduce(0) { $0 + $1.count }
            case let .changes(changes) where current.count >= 0:
                current.count += changes.changes.itemInserts.count - changes.changes.itemDeletes.count
            default: break
            }
        }
    }

    private static let fromField = Array("\"from\":\"".utf8)
    private static let toField = Array("\"to\":\"".utf8)
    private static let versionField = Array("\"version\":\"".utf8)
    private static let atField = Array("\"at\":".utf8)
    private static let resetType = Array("\"type\":\"reset\"".utf8)
    private static let errorType = Array("\"type\":\"error\"".utf8)

    /// The number after a version's last colon.
    private static func sequence(_ version: ArraySlice<UInt8>) -> UInt64? {
        guard let colon = version.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        var value: UInt64 = 0
        for byte in version[(colon + 1)...] {
            guard byte >= 48, byte <= 57 else { return nil }
            value = value &* 10 &+ UInt64(byte - 48)
        }
        return value
    }


    /// The integer after the last occurrence of `pattern` (`at` is the message's last member).
    private static func integer(after pattern: [UInt8], in bytes: [UInt8]) -> Int64? {
        guard bytes.count > pattern.count else { return nil }
        var index = bytes.count - pattern.count
        while index >= 0 {
            if bytes[index] == pattern[0], bytes[index..<index + pattern.count].elementsEqual(pattern) { break }
            index -= 1
        }
        guard index >= 0 else { return nil }
        var value: Int64 = 0, digits = 0
        for byte in bytes[(index + pattern.count)...] {
            guard byte >= 48, byte <= 57 else { break }
            value = value &* 10 &+ Int64(byte - 48)
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}

/// `pg.mixed`'s load generator, in a process of its own: bare NIO connections (FanoutConnection),
/// each frame timed at receipt and parsed only for its versions.
public enum PostgresMixedLoad {
    /// Opens the warmers and waits for their whole lists, opens the subscribers and waits for
    /// their first reset, closes the warmers, prints "ready"; then reads the path of the commits
    /// file on its input, waits for every subscriber to reach the last commit that touched its
    /// query (until the drain deadline), and returns one JSON line of figures.
    public static func child(specification path: String) throws -> String {
        let specification = try JSONDecoder().decode(MixedSpecification.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        defer { try? group.syncShutdownGracefully() }
        let warmers = specification.warmers.map { _ in MixedRecorder(countsRows: true) }
        var warmChannels: [any Channel] = []
        for (warmer, recorder) in zip(specification.warmers, warmers) {
            warmChannels += try FanoutConnections.open(url: warmer.url, subscribe: Array(warmer.subscribe.utf8), recorders: [recorder], group: group)
        }
        var deadline = Date().addingTimeInterval(60)
        while let index = zip(specification.warmers, warmers).map({ $0.count == $1.state.count }).firstIndex(of: false) {
            guard Date() < deadline else {
                let state = warmers[index].state
                throw BenchFailure("pg.mixed: \(specification.warmers[index].subscribe) on \(specification.warmers[index].url) has \(state.count) rows, "
                                   + "not the SELECT's \(specification.warmers[index].count), after 60 s\(state.firstError.map { ": \($0)" } ?? "")")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let recorders = specification.subscribers.map { _ in MixedRecorder(countsRows: false) }
        var channels: [any Channel] = []
        for (subscriber, recorder) in zip(specification.subscribers, recorders) {
            channels += try FanoutConnections.open(url: subscriber.url, subscribe: Array(subscriber.subscribe.utf8), recorders: [recorder], group: group)
        }
        deadline = Date().addingTimeInterval(60)
        while let index = recorders.firstIndex(where: { !$0.isSubscribed }) {
            guard Date() < deadline else {
                throw BenchFailure("pg.mixed: no reset for \(specification.subscribers[index].subscribe) within 60 s\(recorders[index].state.firstError.map { ": \($0)" } ?? "")")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        for channel in warmChannels { channel.close(promise: nil) }
        let cpuBefore = WireFanout.cpuSeconds()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        guard let commitsPath = readLine() else { throw BenchFailure("pg.mixed: no commits from the parent") }
        let commits = try JSONDecoder().decode(MixedCommits.self, from: Data(contentsOf: URL(fileURLWithPath: commitsPath)))
        // Each subscriber's commits: those that wrote a table its query reads, by position.
        let relevant: [[MixedCommits.Commit]] = specification.subscribers.map { subscriber in
            commits.commits.filter { !Set($0.tables).isDisjoint(with: subscriber.tables) }.sorted { $0.end < $1.end }
        }
        let drainDeadline = commits.stopped + commits.drainSeconds
        var caughtUp: Double?
        while true {
            let behind = zip(recorders, relevant).contains { recorder, commits in
                guard let last = commits.last else { return false }
                return recorder.highest < last.end
            }
            let now = Date().timeIntervalSince1970
            if !behind {
                caughtUp = now
                break
            }
            if now >= drainDeadline { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let cpu = WireFanout.cpuSeconds() - cpuBefore
        for channel in channels { channel.close(promise: nil) }
        let figures = analyse(specification, recorders.map(\.state), relevant, commits: commits)
        var object = figures
        object["drain_ms"] = caughtUp.map { max(0, $0 - commits.stopped) * 1_000 } ?? -1
        object["load_generator_cpu_ms_per_commit"] = cpu * 1_000 / Double(max(1, commits.commits.count))
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// The figures: per (subscriber, commit that wrote a table of its query), the time from the
    /// writer sending COMMIT to the first message at a version at or past the commit's end.
    static func analyse(_ specification: MixedSpecification, _ states: [MixedRecorder.State], _ relevant: [[MixedCommits.Commit]],
                        commits: MixedCommits) -> [String: Any] {
        var latencies: [Double] = [], seen: [Double] = []
        var byQuery: [String: (latencies: [Double], lost: Int)] = [:]
        var lost = 0, resets = 0, gaps = 0, errors = 0, bytes = 0, frames = 0, wentBack = 0, empty = 0
        var lostExamples: [String] = [], errorExamples: [String] = []
        // Every version a subscriber receives should be the end of one of the writers' commits,
        // as logical decoding gave it: the check that versions and commits are matched right.
        let ends = Set(commits.commits.map(\.end))
        var unmatched = 0
        // The slowest pairs, one per commit: where (instance, query) and when in the run, to tell
        // one instance's stall from the machine's.
        let firstSent = commits.commits.map(\.sent).min() ?? 0
        var slowest: [Double: (latency: Double, text: String)] = [:]
        for (index, state) in states.enumerated() {
            let subscriber = specification.subscribers[index]
            resets += state.resets
            gaps += state.gaps
            empty += state.empty
            errors += state.errors
            bytes += state.bytes
            frames += state.frames
            if let error = state.firstError, errorExamples.count < 3 { errorExamples.append(error) }
            // The messages that took the subscriber further, in order of receipt.
            var steps: [MixedRecorder.Received] = []
            var highest = state.initialSequence
            for received in state.received {
                if !ends.contains(received.sequence) { unmatched += 1 }
                if received.sequence < highest { wentBack += 1 }
                if received.sequence > highest {
                    highest = received.sequence
                    steps.append(received)
                }
            }
            var queryLatencies: [Double] = [], queryLost = 0
            var step = 0
            for commit in relevant[index] where commit.end > state.initialSequence {
                while step < steps.count, steps[step].sequence < commit.end { step += 1 }
                guard step < steps.count else {
                    queryLost += 1
                    if lostExamples.count < 5 {
                        lostExamples.append("\(subscriber.query) on \(subscriber.url): commit ending at \(commit.end) (\(commit.tables.joined(separator: ","))), "
                                            + "last version received \(highest)")
                    }
                    continue
                }
                let latency = (steps[step].time - commit.sent) * 1_000
                queryLatencies.append(latency)
                if latency > slowest[commit.sent]?.latency ?? 0 {
                    slowest[commit.sent] = (latency, String(format: "%.0f ms: %@ on %@, commit at +%.2f s (%@)", latency, subscriber.query, subscriber.url,
                                                            commit.sent - firstSent, commit.tables.joined(separator: ",")))
                }
                if let at = steps[step].at { seen.append((Double(at) / 1_000_000 - commit.sent) * 1_000) }
            }
            latencies += queryLatencies
            lost += queryLost
            byQuery[subscriber.query, default: ([], 0)].latencies += queryLatencies
            byQuery[subscriber.query, default: ([], 0)].lost += queryLost
        }
        func percentile(_ values: [Double], _ p: Double) -> Double { values.isEmpty ? -1 : LiveQueryBenchmarks.percentile(values, p) }
        var perQuery: [String: Any] = [:]
        for (query, figures) in byQuery {
            perQuery[query] = ["median_ms": rounded(percentile(figures.latencies, 0.5)), "p99_ms": rounded(percentile(figures.latencies, 0.99)),
                               "lost": figures.lost, "pairs": figures.latencies.count + figures.lost]
        }
        return [
            "median_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99), "max_ms": latencies.max() ?? -1,
            "pairs": latencies.count + lost, "lost": lost, "resets": resets, "gaps": gaps, "errors": errors, "went_back": wentBack, "unmatched_versions": unmatched,
            "bytes": bytes, "frames": frames, "empty": empty, "server_seen_median_ms": percentile(seen, 0.5), "server_seen_p99_ms": percentile(seen, 0.99),
            "by_query": perQuery, "lost_examples": lostExamples, "error_examples": errorExamples,
            "slowest": slowest.values.sorted { $0.latency > $1.latency }.prefix(5).map(\.text),
        ]
    }

    private static func rounded(_ value: Double) -> Double { BenchResult.rounded(value) }
}
