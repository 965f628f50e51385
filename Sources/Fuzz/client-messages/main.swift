import FuzzSupport
import LiveListServer
import LiveListWire

// The bytes a client sends a server, as the server reads them: WebSocket frames joined into
// messages (`MessageAssembly`), each message's JSON (`JSONParser`), the message
// (`ClientMessage.decode`), and the server's checks of what a request names (arguments against a
// published query's or mutation's parameters, windows against the limit).
//
// An input is frames, one per line. A line that starts with a byte 0x01–0x04 is a frame of its
// own kind — 0x01 a text frame the message goes on after, 0x02 a continuation the message goes
// on after, 0x03 the continuation that ends it, 0x04 a binary frame — and any other line is a
// whole text frame. A frame that closes the connection starts a new one.

/// A published query and a published mutation with every kind of parameter: a default, a claim,
/// each value type.
let parameters = [
    QueryParameter("folder", type: .text, default: .text("inbox")), QueryParameter("limit", type: .integer),
    QueryParameter("score", type: .real, default: .null), QueryParameter("avatar", type: .blob, default: .blob([])),
    QueryParameter("note", type: .any, default: .null), QueryParameter("owner", type: .text, claim: "sub"),
]
let query = PublishedQuery(name: "inbox", sql: "SELECT 1", parameters: parameters)
let mutation = PublishedMutation(name: "archive", parameters: parameters, statements: [.init("SELECT 1")])
let claims: [String: WireValue] = ["sub": .text("ada")]
// Small, so that messages over the limit (1009) are within the fuzzer's reach.
let maximumBytes = 1_024

/// The server's checks of one request's arguments: refused with a code a request can get, or
/// every parameter given a value its type accepts (a NULL default aside), nothing else.
func check(_ arguments: [String: WireValue], mutation isMutation: Bool) {
    let checked: [String: WireValue]
    do {
        checked = isMutation ? try mutation.validate(arguments, claims: claims) : try query.validate(arguments, claims: claims)
    } catch {
        precondition(error.code == .badArguments || (isMutation && error.code == .unauthorized), "\(error)")
        return
    }
    precondition(Set(checked.keys) == Set(parameters.map(\.name)), "\(checked)")
    precondition(checked["owner"] == .text("ada"), "a claim's parameter came from the client: \(checked)")
    for parameter in parameters {
        let value = checked[parameter.name] ?? .null
        let accepted = switch (parameter.type, value) {
        case (.any, _), (_, .null), (.integer, .integer), (.real, .real), (.real, .integer), (.text, .text), (.blob, .blob): true
        default: false
        }
        precondition(accepted, "\(parameter.name) = \(value)")
    }
}

func read(_ message: [UInt8]) {
    precondition(message.count <= maximumBytes && String(validating: message, as: UTF8.self) != nil)
    // The JSON alone, at the parser's default depth: what it reads, it writes and reads again.
    if let json = try? JSONParser.parse(message) {
        let text = json.serialized
        guard let again = try? JSONParser.parse(Array(text.utf8)) else { preconditionFailure("\(text) does not read again") }
        precondition(again.serialized == text, "\(text) reads back as \(again.serialized)")
    }
    let decoded: ClientMessage
    do {
        decoded = try ClientMessage.decode(message)
    } catch let .badArguments(request, reason) {
        // Refused alone: the request is named without its arguments, and says so.
        precondition(!reason.isEmpty)
        switch request {
        case let .subscribe(subscription): precondition(subscription.arguments.isEmpty)
        case let .arguments(_, arguments): precondition(arguments.isEmpty)
        case let .mutate(mutation): precondition(mutation.arguments.isEmpty && (1...WireMutation.maximumID).contains(mutation.id))
        default: preconditionFailure("\(request) refused for its arguments")
        }
        return
    } catch {
        precondition(!error.description.isEmpty)
        return
    }
    // Whatever decodes encodes to a frame that decodes to the same message.
    let encoded = decoded.encoded()
    precondition((try? ClientMessage.decode(Array(encoded.utf8))) == decoded, "\(encoded) does not decode to \(decoded)")
    switch decoded {
    case let .subscribe(subscription):
        check(subscription.arguments, mutation: false)
        if let range = subscription.window.range { precondition(range.count == subscription.window.count && range.lowerBound >= 0) }
    case let .arguments(_, arguments):
        check(arguments, mutation: false)
    case let .mutate(request):
        precondition(!request.client.isEmpty && request.client.utf8.count <= 128 && request.name.utf8.count <= 256)
        precondition((1...WireMutation.maximumID).contains(request.id))
        check(request.arguments, mutation: true)
    case let .window(_, window):
        if let range = window.range { precondition(range.count == window.count) }
    case .unsubscribe, .sync:
        break
    }
}

FuzzTarget.main { bytes in
    var assembly = MessageAssembly(maximumBytes: maximumBytes)
    for line in bytes.lines {
        let opcode: MessageAssembly.Opcode
        let fin: Bool
        var data = line
        switch line.first {
        case 0x01: (opcode, fin) = (.text, false)
        case 0x02: (opcode, fin) = (.continuation, false)
        case 0x03: (opcode, fin) = (.continuation, true)
        case 0x04: (opcode, fin) = (.binary, true)
        default: (opcode, fin) = (.text, true)
        }
        if opcode != .text || !fin { data = data.dropFirst() }
        switch assembly.receive(opcode, fin: fin, data: data) {
        case let .message(message): read(message)
        case .pending: break
        case .close: assembly = MessageAssembly(maximumBytes: maximumBytes)
        }
    }
}
