import FuzzSupport
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListWire

// The bytes a server sends a client, as the Swift client reads them: each frame decoded
// (`ServerMessage.decode`: `WireReset`, `WireChanges` with `WireOrder`, rows, errors), applied to
// the list's model (`RemoteListModel`, which must refuse what does not fit the list it holds —
// out-of-range positions, inconsistent counts, versions that jump), and what the model accepts
// shown by a presenter in a strict headless view, which checks every batch as UIKit does. A
// hostile or broken server may make the client subscribe again; it must never crash it, nor
// make it show a list its changes do not lead to.
//
// An input is frames for subscription 1, one per line.

/// The window the client asks for.
let window = 0..<40

@MainActor
final class Client {
    var model = RemoteListModel()
    let presenter = ListPresenter<RemoteSection, RemoteRow>()
    let view: HeadlessListView<PresentedRow<RemoteSection, RemoteRow>, PresentedSection<RemoteSection>>

    init() {
        (view, _) = presenter.attachHeadlessView(realization: .visible(margin: 5), viewportRows: 10)
        view.layoutIfNeeded()
        model.didSubscribe(window: window)
    }

    func receive(_ frame: [UInt8]) {
        let message: ServerMessage
        do {
            message = try ServerMessage.decode(frame)
        } catch {
            return   // the client drops the connection and subscribes again
        }
        let encoded = message.encoded()
        precondition((try? ServerMessage.decode(Array(encoded.utf8))) == message, "\(encoded) does not decode to \(message)")
        if case let .reset(reset) = message, let order = reset.order { checkOrder(order, reset.rows) }
        let before = model.state
        let output: RemoteListModel.Output
        do {
            output = try model.receive(message)
        } catch {
            // Subscribes again: the model starts over from the next reset.
            model = RemoteListModel()
            model.didSubscribe(window: window)
            return
        }
        let state = model.state
        precondition(state.counts.count == state.keys.count && state.counts.allSatisfy { $0 >= 0 })
        switch output {
        case .initial:
            presenter.replace(with: state)
        case let .changes(changeset, _):
            precondition(changeset.before?.stateID == before.stateID && changeset.after?.stateID == state.stateID)
            precondition(changeset.after?.itemCount == state.count && changeset.before?.itemCount == before.count)
            presenter.apply(changeset)
        case .rowsLoaded, .synced, .none:
            break
        }
        view.finishBatchAnimations()
        precondition(view.violations.isEmpty, "\(view.violations)")
    }

    /// An order is a total preorder over the rows a reset holds, whatever values they were sent
    /// with (a column they lack is NULL): each row equals itself, and two rows compare oppositely
    /// either way round.
    func checkOrder(_ order: WireOrder, _ rows: [WireRow]) {
        let keyed = rows.prefix(16).compactMap { row in row.values.map { (id: row.id, values: $0) } }
        for a in keyed {
            precondition(order.compare(a, a) == 0, "\(a) is not equal to itself")
            for b in keyed { precondition(order.compare(a, b).signum() == -order.compare(b, a).signum(), "\(a) and \(b)") }
        }
    }
}

FuzzTarget.main { bytes in
    MainActor.assumeIsolated {
        let client = Client()
        for line in bytes.lines { client.receive(Array(line)) }
    }
}
