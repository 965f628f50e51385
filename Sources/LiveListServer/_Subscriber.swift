import LiveListWire
import NIOCore

/// One subscription of one connection to a live query: where its frames go.
final class _Subscriber: Sendable {
    /// The client's number for it.
    let sub: Int
    let outbox: _Outbox

    init(sub: Int, outbox: _Outbox) {
        self.sub = sub
        self.outbox = outbox
    }

    var key: ObjectIdentifier { ObjectIdentifier(self) }

    func send(body: String, isReset: Bool = false) {
        outbox.send(_Outbox.Frame(message: _WireMessage(string: ServerMessage.frame(sub: sub, body: body)), sub: sub, isReset: isReset))
    }

    /// Sends a frame already made for this subscription's number (shared with other subscribers).
    func send(_ message: _WireMessage) {
        outbox.send(_Outbox.Frame(message: message, sub: sub, isReset: false))
    }

    func send(_ code: WireErrorCode, _ message: String) {
        let text = ServerMessage.error(WireError(sub: sub, code: code, message: message)).encoded()
        outbox.send(_Outbox.Frame(message: _WireMessage(string: text), sub: sub, isReset: false))
    }
}
