import Foundation
import HTTPTypes
import HummingbirdWSClient
import LiveListServer
import LiveListWire
import Logging
import Testing

/// Sends `frames` on one connection, one after the other's answer, and returns what came back
/// and the close code.
func exchange(_ url: String, _ frames: [String], answers: Int, token: String? = nil) async throws -> (messages: [String], close: UInt16?) {
    let (collected, continuation) = AsyncStream<String>.makeStream()
    var headers = HTTPFields()
    if let token { headers[.authorization] = "Bearer \(token)" }
    let configuration = WebSocketClientConfiguration(additionalHeaders: headers)
    let close = try await WebSocketClient.connect(url: url, configuration: configuration, logger: Logger(label: "test.client")) { inbound, outbound, _ in
        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
        var received = 0
        for frame in frames {
            try await outbound.write(.text(frame))
        }
        while received < answers, let message = try await iterator.next() {
            if case let .text(text) = message { continuation.yield(text) }
            received += 1
        }
        if answers == 0 { while try await iterator.next() != nil {} }
    }
    continuation.finish()
    var messages: [String] = []
    for await message in collected { messages.append(message) }
    return (messages, close.map { UInt16(webSocketErrorCode: $0.closeCode) })
}

@Suite("Bad requests over the wire", .serialized)
struct WireProtocolErrorTests {
    @Test("Unknown queries, bad arguments, bad windows and duplicates get typed errors; the connection then serves a good subscription")
    func typedErrors() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.maximumWindow = 100
        configuration.maximumSubscriptionsPerConnection = 2
        let fixture = try await WireFixture.start(rows: 20, seed: 1, configuration: configuration)
        let frames = [
            #"{"type":"subscribe","sub":1,"query":"nope","window":[0,10]}"#,
            #"{"type":"subscribe","sub":2,"query":"inbox","arguments":{"folder":7},"window":[0,10]}"#,
            #"{"type":"subscribe","sub":3,"query":"inbox","arguments":{"where":"1=1"},"window":[0,10]}"#,
            #"{"type":"subscribe","sub":4,"query":"inbox","window":[0,101]}"#,
            #"{"type":"window","sub":9,"window":[0,10]}"#,
            // A web mutator's liveness probe: answered at once, the connection kept.
            #"{"type":"sync","sub":0,"id":1}"#,
            #"{"type":"subscribe","sub":6,"query":"inbox","window":[-1,10]}"#,
            #"{"type":"subscribe","sub":5,"query":"inbox","window":[0,10]}"#,
            #"{"type":"subscribe","sub":5,"query":"inbox","window":[0,10]}"#,
        ]
        let (messages, _) = try await exchange(fixture.url, frames, answers: 9)
        let decoded = try messages.map { try ServerMessage.decode(Array($0.utf8)) }
        let errors = decoded.compactMap { message -> WireErrorCode? in if case let .error(error) = message { error.code } else { nil } }
        #expect(errors == [.unknownQuery, .badArguments, .badArguments, .windowTooLarge, .unknownSubscription, .unknownSubscription, .badWindow,
                           .duplicateSubscription])
        #expect(decoded.contains { if case let .reset(reset) = $0 { reset.sub == 5 && reset.rows.count == 10 } else { false } })
        await fixture.stop()
    }

    @Test("A malformed frame closes the connection with the protocol error code; other clients go on")
    func malformedFrames() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 2)
        for frame in ["{not json", #"{"type":"subscribe"}"#, #"{"type":"dance","sub":1}"#, "[]", #"{"type":"window","sub":1,"window":[0]}"#] {
            let (_, close) = try await exchange(fixture.url, [frame], answers: 0)
            #expect(close == WireCloseCode.protocolError.rawValue, "\(frame)")
        }
        let (messages, _) = try await exchange(fixture.url, [#"{"type":"subscribe","sub":1,"query":"inbox","window":[0,5]}"#], answers: 1)
        #expect(messages.first?.contains(#""type":"reset""#) == true)
        await fixture.stop()
    }

    @Test("A message larger than a WebSocket frame arrives whole (the server splits it into frames)")
    func largeMessages() async throws {
        let fixture = try await WireFixture.start(rows: 1_500, seed: 3)
        let (messages, _) = try await exchange(fixture.url, [#"{"type":"subscribe","sub":1,"query":"inbox","window":[0,2000]}"#], answers: 1)
        let frame = try #require(messages.first)
        #expect(frame.utf8.count > 1 << 15)
        guard case let .reset(reset) = try ServerMessage.decode(Array(frame.utf8)) else { throw TimeLimitExceeded(what: "a reset") }
        #expect(reset.rows.count == reset.sections.reduce(0) { $0 + $1.count })
        await fixture.stop()
    }
}
