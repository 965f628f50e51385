import LiveListWire
import NIOCore

/// One subscription of one connection to a live query: where its frames go.
final class Subscriber: Sendable {
    /// The client's number for it.
    let sub: Int
    let outbox: Outbox
    /// What its connection's lists are told of the mutations (`nil`: nothing).
    let effects: ListEffects?
    /// Tells the connection that the hub ended the subscription (its number is free again).
    private let onEnd: @Sendable (Subscriber) -> Void

    init(sub: Int, outbox: Outbox, effects: ListEffects? = nil, onEnd: @escaping @Sendable (Subscriber) -> Void = { _ in }) {
        self.sub = sub
        self.outbox = outbox
        self.effects = effects
        self.onEnd = onEnd
    }

    /// Sends the error that ends the subscription, and frees its number on the connection.
    func end(_ code: WireErrorCode, _ message: String) {
        send(code, message)
        onEnd(self)
    }

    var key: ObjectIdentifier { ObjectIdentifier(self) }

    /// Sends a message whose list holds `version` (the `to` of a `changes`, a reset's version).
    func send(body: String, isReset: Bool = false, version: WireVersion) {
        outbox.send(Outbox.Frame(message: WireMessage(string: ServerMessage.frame(sub: sub, body: body)), sub: sub, isReset: isReset,
                                  version: version))
    }

    /// Sends a frame already made for this subscription's number (shared with other subscribers),
    /// whose list holds `version`.
    func send(_ message: WireMessage, version: WireVersion) {
        outbox.send(Outbox.Frame(message: message, sub: sub, isReset: false, version: version))
    }

    func send(_ code: WireErrorCode, _ message: String) {
        let text = ServerMessage.error(WireError(sub: sub, code: code, message: message)).encoded()
        outbox.send(Outbox.Frame(message: WireMessage(string: text), sub: sub, isReset: false))
    }
}
