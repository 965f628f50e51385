import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListWire
import Testing

/// A server that hangs (SIGSTOP: the kernel keeps its connections open and even completes new
/// TCP handshakes, but nothing answers) is noticed by the client's pings, new attempts give up on
/// its silent handshakes, and once it answers again the list equals the SELECT.
@Suite("The client notices a server that stopped answering", .serialized, .timeLimit(.minutes(2)))
struct ClientLivenessTests {
    static let config = """
        queries:
          - name: inbox
            sql: SELECT id, day, sender, subject FROM message WHERE folder = :folder ORDER BY day DESC, sender, id
            section: day
            parameters:
              - { name: folder, type: text, default: inbox }
        """

    @Test("a hung server: the connection is dropped within two pings, handshakes time out, and the list is exact once it answers")
    @MainActor
    func hungServer() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("client liveness")
        var random = SeededRandomNumberGenerator(seed: seed)
        // The fixture makes the database; the server under test is a process of its own.
        let fixture = try await WireFixture.start(rows: 120, seed: seed)
        await fixture.stop()
        let configFile = NSTemporaryDirectory() + "livelist-liveness-\(UUID().uuidString).yaml"
        try Self.config.write(toFile: configFile, atomically: true, encoding: .utf8)
        let server = try await ServeProcess.start(["--db", fixture.path, "--config", configFile])
        defer {
            Glibc.kill(server.pid, SIGCONT)
            server.kill()
        }
        let transport = WebSocketTransport(pingInterval: .milliseconds(250), connectTimeout: .milliseconds(500))
        let client = WireClient(url: server.url, viewportRows: 10, window: 0..<30, transport: transport)
        defer { client.remote.stop() }
        try await within("the list equals the SELECT") {
            while client.mismatch(try fixture.select()) != nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(client.remote.connectionState == .live)

        Glibc.kill(server.pid, SIGSTOP)
        // Without pings a connection that only receives never notices; with them, within two.
        try await within("the hung server noticed", seconds: 10) {
            while client.remote.connectionState == .live { try await Task.sleep(for: .milliseconds(10)) }
        }
        // Its handshakes are never answered: each attempt gives up, and the next one follows.
        try await within("attempts that time out", seconds: 20) {
            while true {
                if case let .reconnecting(attempt, reason) = client.remote.connectionState, attempt >= 3 {
                    #expect(reason.contains("handshake"), "\(reason)")
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await fixture.randomWrites(20, &random)

        Glibc.kill(server.pid, SIGCONT)
        try await within("the list equals the SELECT after the server answers again") {
            while try client.remote.connectionState != .live || client.mismatch(fixture.select()) != nil {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #if os(Linux)
        // The attempts given up were closed once the server answered them: it holds the one
        // connection in use.
        try await within("the given-up connections closed") {
            while try Self.establishedConnections(toPort: server.port) > 1 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #endif
    }

    #if os(Linux)
    /// TCP connections in state ESTABLISHED whose local port is `port` (the server's ends), from
    /// the kernel's table.
    static func establishedConnections(toPort port: Int) throws -> Int {
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 3, let local = fields[1].split(separator: ":").last, Int(local, radix: 16) == port, fields[3] == "01" else { continue }
                count += 1
            }
        }
        return count
    }
    #endif
}
