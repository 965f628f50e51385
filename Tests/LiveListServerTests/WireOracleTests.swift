import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListServer
import LiveListWire
import Testing

/// A remote list shown in a strict headless view, as an app shows it.
@MainActor
final class WireClient {
    typealias Cells = ListCellSource<RemoteSection, RemoteRow, RemoteRecord>
    let remote: RemoteLiveQuery
    let presenter = ListPresenter<RemoteSection, RemoteRow>()
    let cells: Cells
    let view: HeadlessListView<Cells.Content, SectionHeaderContent<RemoteSection>>
    let dataSource: CellSourceDataSource<RemoteSection, RemoteRow, RemoteRecord>

    init(url: String, query: String = "inbox", viewportRows: Int, window: Range<Int>, transport: any RemoteTransport = WebSocketTransport(),
         startsAtOnce: Bool = true) {
        remote = RemoteLiveQuery(url: url, query: query, window: window, prefetch: 10, transport: transport)
        cells = ListCellSource(presenter: presenter, records: remote.records, prefetch: 10)
        (view, dataSource) = cells.attachHeadlessView(viewportRows: viewportRows)
        let cells = cells
        remote.onEvent = { event in cells.receive(event) }
        if startsAtOnce { remote.start() }
    }

    /// Why the list differs from the database's answer (`nil`: it equals it) — every section and
    /// count, every row of the window with its exact values, the view caught up, every visible
    /// cell showing its record.
    func mismatch(_ oracle: (sections: [WireSection], rows: [[WireValue]])) -> String? {
        if !view.violations.isEmpty { return "violations \(view.violations)" }
        let state = remote.model.state
        if state.keys != oracle.sections.map(\.key) || state.counts != oracle.sections.map(\.count) {
            return "sections \(state.counts) vs \(oracle.sections.map(\.count))"
        }
        for position in remote.model.window.clamped(to: 0..<state.count) {
            let row = state.row(at: position)
            guard row.id == .row(oracle.rows[position][0]) else { return "row \(position): \(row.id) vs \(oracle.rows[position][0])" }
            guard let record = remote.model.record(for: row) else { return "row \(position): no record" }
            guard record.values == oracle.rows[position] else { return "row \(position): \(record.values) vs \(oracle.rows[position])" }
        }
        if presenter.displayed.model.stateID != state.stateID { return "view not caught up" }
        let stale = view.staleCells(recordsEqual: ==)
        if let path = stale.first {
            return "stale cells \(stale): shows \(String(describing: view.cellContent(at: path))), source \(dataSource.cell(at: path)); window \(remote.model.window), offset \(view.contentOffset)"
        }
        for path in view.visibleItems {
            guard case .record? = view.cellContent(at: path) else {
                return "visible \(path) shows \(String(describing: view.cellContent(at: path))); window \(remote.model.window)"
            }
        }
        return nil
    }

    func matches(_ oracle: (sections: [WireSection], rows: [[WireValue]])) -> Bool { mismatch(oracle) == nil }
}

@Suite("Live lists over the wire", .serialized)
struct WireOracleTests {
    @Test("Clients with different windows equal a fresh SELECT after random commits from the server's connection, another connection and another process; through a stalled client, a resume and a server restart")
    @MainActor
    func oracle() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("wire oracle")
        var random = SeededRandomNumberGenerator(seed: seed)
        var fixture = try await WireFixture.start(rows: 400, seed: seed)
        let other = try DatabaseQueue(path: fixture.path)
        let gated = GatedTransport()
        let clients = [
            WireClient(url: fixture.url, viewportRows: 12, window: 0..<30),
            WireClient(url: fixture.url, viewportRows: 8, window: 100..<130),
            WireClient(url: fixture.url, viewportRows: 20, window: 0..<40),
            WireClient(url: fixture.url, viewportRows: 10, window: 50..<80, transport: gated),
        ]
        try await eventually("first states") { try clients.allSatisfy { $0.matches(try fixture.select()) } }
        clients[1].view.setContentOffset(100)
        clients[3].view.setContentOffset(50)
        var restarted = false
        for round in 0..<10 {
            if round == 1 { gated.gate.close() }
            let writes = random.next(upTo: 12) + 1
            for _ in 0..<writes {
                let start = random
                let write = { @Sendable (db: Database) throws -> SeededRandomNumberGenerator in
                    var random = start
                    try WireFixture.randomWrite(db, &random)
                    return random
                }
                random = random.next(upTo: 3) == 0 ? try await other.write(write) : try await fixture.pool.write(write)
            }
            // Another process: the sqlite3 shell, when the machine has it.
            if let shell = WireFixture.sqliteShell {
                let id = random.next(upTo: 400) + 1
                try await WireFixture.run(shell, [fixture.path, ".timeout 10000", "UPDATE message SET day = (day + 3) % 8, sender = sender || 'é' WHERE id = \(id)"])
            }
            if round == 3 { gated.gate.open() }
            if round == 4 { clients[2].remote.stop() }
            if round == 6 { clients[2].remote.start() }
            if round == 7 {
                fixture = try await fixture.restart()
                restarted = true
            }
            if round % 3 == 2 {
                let count = clients[1].remote.model.state.count
                clients[1].view.setContentOffset(random.next(upTo: max(1, count)))
            }
            // The stopped client is checked once it is back (its resume is what is tested); the
            // stalled one once it reads again.
            let following = (4..<6).contains(round) ? Array(clients[0..<2]) : (1..<3).contains(round) ? Array(clients[0..<3]) : clients
            do {
                try await eventually("round \(round) (seed \(seed))") { try following.allSatisfy { $0.matches(try fixture.select()) } }
            } catch {
                let oracle = try fixture.select()
                for (index, client) in following.enumerated() { print("client \(index): \(client.mismatch(oracle) ?? "matches")") }
                throw error
            }
        }
        #expect(restarted)
        // The stopped client resumed with one composed changeset: its resets are its first state and
        // the restart's (a new server knows none of the old one's versions).
        #expect(clients[2].remote.resetsReceived == 2)
        #expect(clients[2].remote.model.lastResetReason == .versionUnavailable)
        for client in clients { client.remote.stop() }
        await fixture.stop()
    }
}
