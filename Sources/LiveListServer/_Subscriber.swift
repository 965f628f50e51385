import LiveListWire

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
        outbox.send(_Outbox.Frame(text: ServerMessage.frame(sub: sub, body: body), sub: sub, isReset: isReset))
    }

    func send(_ code: WireErrorCode, _ message: String) {
        let text = ServerMessage.error(WireError(sub: sub, code: code, message: message)).encoded()
        outbox.send(_Outbox.Frame(text: text, sub: sub, isReset: false))
    }
}
