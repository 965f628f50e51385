import Foundation
import GRDB
import ListPresenter
import LiveListClient
import LiveListOffline
import LiveListWire

/// `wire.offline_start`: an app launched from a kept 2,000-row window — the store opened, the
/// list restored, its first frame applied by the presenter — against the same launch online
/// (connecting and waiting for the server's first state over loopback), in the same run.
public enum OfflineBenchmarks {
    @MainActor
    public static func run(quick: Bool, filter: String?) throws -> [BenchResult] {
        guard filter.map({ "wire.offline_start".hasPrefix($0) }) ?? true else { return [] }
        let rows = quick ? 100_000 : 1_000_000
        let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: UInt64(rows) &+ 17)
        try setup.close()
        let pool = try DatabasePool(path: path)
        let served = try WireServer.start(pool)
        defer { served.stop() }
        let storePath = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-offline-bench-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: storePath) }
        let window = 0..<2_000

        // What the last launch kept.
        do {
            let store = try OfflineStore(path: storePath)
            let list = RemoteLiveQuery(url: served.url, query: "items", window: window, prefetch: 0)
            try store.keep(list, as: "items")
            list.start()
            try MutationBenchmarks.pump(seconds: 30, "the window to keep") {
                list.model.window == window && window.allSatisfy { list.model.record(for: list.model.state.row(at: $0)) != nil }
            }
            try store.save()
            list.stop()
        }
        let clock = ContinuousClock()
        let runs = quick ? 11 : 51
        var offline: [Double] = [], online: [Double] = []
        var keptRows = 0
        for _ in 0..<runs {
            // Offline: nothing is started; the first frame is the kept list.
            let start = clock.now
            let store = try OfflineStore(path: storePath)
            let list = RemoteLiveQuery(url: served.url, query: "items", window: window, prefetch: 0)
            let presenter = ListPresenter<RemoteSection, RemoteRow>()
            let cells = ListCellSource(presenter: presenter, records: list.records, prefetch: 0)
            _ = EndToEndBenchmarks.attach(presenter)
            list.onEvent = { cells.receive($0) }
            guard case .restored = try store.keep(list, as: "items") else { throw BenchFailure("wire.offline_start: the kept list was not restored") }
            try MutationBenchmarks.pump(seconds: 10, "wire.offline_start: the first frame") {
                presenter.displayed.model.stateID == list.displayedState.stateID
            }
            offline.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            keptRows = list.model.heldList()?.rows.count ?? 0

            // Online: connect, subscribe, the server's first state applied.
            let onlineStart = clock.now
            let fresh = RemoteLiveQuery(url: served.url, query: "items", window: window, prefetch: 0)
            let freshPresenter = ListPresenter<RemoteSection, RemoteRow>()
            let freshCells = ListCellSource(presenter: freshPresenter, records: fresh.records, prefetch: 0)
            _ = EndToEndBenchmarks.attach(freshPresenter)
            fresh.onEvent = { freshCells.receive($0) }
            fresh.start()
            try MutationBenchmarks.pump(seconds: 10, "wire.offline_start: the online first state") {
                fresh.model.version != nil && freshPresenter.displayed.model.stateID == fresh.displayedState.stateID
            }
            online.append(Stopwatch.milliseconds(onlineStart.duration(to: clock.now)))
            fresh.stop()
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: storePath)[.size] as? Int) ?? 0
        var result = BenchResult(name: "wire.offline_start", medianMilliseconds: LiveQueryBenchmarks.median(offline), runs: runs)
        result.baseline = "online: connect and the server's first state, loopback"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(online)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(offline, 0.99))))
        result.add("online_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(online, 0.99))))
        result.add("kept_rows", .integer(Int64(keptRows)))
        result.add("list_rows", .integer(Int64(rows / 2)))
        result.add("store_bytes", .integer(Int64(bytes)))
        let met = LiveQueryBenchmarks.median(offline) <= 50
        result.add("budget_met", .bool(met))
        result.notes.append("budget (first frame from the kept window ≤ 50 ms): " + (met ? "met" : "missed"))
        result.notes.append("the store opened, a RemoteLiveQuery restored from it, a presenter's first frame; nothing connected")
        return [result]
    }
}
