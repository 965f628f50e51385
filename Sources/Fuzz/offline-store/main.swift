import Foundation
import FuzzSupport
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListOffline
import LiveListWire

// What `OfflineStore` reads back from its SQLite file, which an app cannot vouch for (a damaged
// file, a file from another version): a kept list (its query, its arguments as an `arguments`
// message, the list as a `reset`), a mutator's pending mutations (each a `mutate` message) and
// their expected effects (each an `arguments` message of the change's parts). Whatever the file
// holds, `keep` shows the list or says why not, `mutator` resends what it can read and counts the
// rest, and the list shown — the kept list with the effects laid over it — changes by batches a
// strict headless view accepts.
//
// An input is lines: the kept list's query, its arguments, the list, then mutations (a line
// starting with `M`) and effects of the mutation before them (a line starting with `E`).

/// A transport never used: the lists and the mutator are not started.
struct NoTransport: RemoteTransport {
    struct Unreachable: Error {}
    func connect(to url: String) async throws -> RemoteConnection { throw Unreachable() }
}

let url = "ws://127.0.0.1:1/live"
let client = "app-fuzz"
/// The store's file, in memory when the system has a folder for it (a disk's writes would be most of the time).
let path = (FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory)
    .appendingPathComponent("livelist-fuzz-offline-\(getpid()).sqlite").path

/// The files of runs that ended without their exit handler (a crash, libFuzzer's own exit):
/// removed when their process is gone.
let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix("livelist-fuzz-offline-") {
    let digits = name.dropFirst("livelist-fuzz-offline-".count).prefix { $0.isNumber }
    if let pid = Int32(digits), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { unlink(folder + "/" + name) }
}

/// Removed as the process exits (with SQLite's journal, if any).
nonisolated(unsafe) let removedAtExit = strdup(path)
atexit {
    guard let removedAtExit else { return }
    unlink(removedAtExit)
    unlink(String(cString: removedAtExit) + "-journal")
}

/// The file's other connection: what a damaged file holds is written through it.
let file: DatabaseQueue = MainActor.assumeIsolated {
    do {
        _ = try OfflineStore(path: path)   // its tables
        return try DatabaseQueue(path: path)
    } catch {
        fatalError("the fuzz target's store: \(error)")
    }
}

@MainActor
func readBack(_ bytes: [UInt8]) throws {
    var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    while lines.count < 3 { lines.append("") }
    let (query, arguments, list) = (lines[0], lines[1], lines[2])
    try file.write { db in
        for table in ["livelist_offline_list", "livelist_offline_mutator", "livelist_offline_mutation", "livelist_offline_effect"] {
            try db.execute(sql: "DELETE FROM \(table)")
        }
        try db.execute(sql: "INSERT INTO livelist_offline_list (key, query, arguments, list, saved_at, sequence) VALUES ('inbox', ?, ?, ?, 0, 1)",
                       arguments: [query, arguments, list])
        var id: Int64 = 0
        var position = 0
        for line in lines.dropFirst(3) {
            if line.hasPrefix("M") {
                let message = String(line.dropFirst())
                // The number the row is kept under: the message's own when it has one, so that most rows are read.
                if case let .mutate(mutation)? = try? ClientMessage.decode(Array(message.utf8)) { id = mutation.id } else { id += 1 }
                position = 0
                try db.execute(sql: "INSERT OR REPLACE INTO livelist_offline_mutation (client, id, message) VALUES (?, ?, ?)",
                               arguments: [client, id, message])
            } else if line.hasPrefix("E") {
                try db.execute(sql: "INSERT OR REPLACE INTO livelist_offline_effect (client, id, list_key, position, change) VALUES (?, ?, 'inbox', ?, ?)",
                               arguments: [client, id, position, String(line.dropFirst())])
                position += 1
            }
        }
        try db.execute(sql: "INSERT INTO livelist_offline_mutator (url, client, next_id) VALUES (?, ?, ?)", arguments: [url, client, id + 1])
    }

    let store = try OfflineStore(path: path)
    let keptArguments: [String: WireValue] = if case let .arguments(_, decoded)? = try? ClientMessage.decode(Array(arguments.utf8)) { decoded } else { [:] }
    let remote = RemoteLiveQuery(url: url, query: query, arguments: keptArguments, transport: NoTransport())
    let presenter = ListPresenter<RemoteSection, RemoteRow>()
    let (view, _) = presenter.attachHeadlessView(realization: .visible(margin: 5), viewportRows: 10)
    view.layoutIfNeeded()
    remote.onEvent = { event in
        switch event {
        case let .initial(model, _): presenter.replace(with: model)
        case let .changes(changeset, _): presenter.apply(changeset)
        case .failure, .recovered: break
        }
        view.finishBatchAnimations()
    }
    switch try store.keep(remote, as: "inbox") {
    case .restored:
        // The list as the file holds it, read as the store reads it (a text column read as a
        // String ends at a NUL a damaged file may hold).
        let stored = try file.read { db in try String.fetchOne(db, sql: "SELECT list FROM livelist_offline_list") } ?? ""
        guard let shown = remote.snapshot(), case let .reset(kept)? = try? ServerMessage.decode(Array(stored.utf8)) else {
            preconditionFailure("a list restored from what does not read back")
        }
        precondition(shown.list.sections == kept.sections && shown.list.version == kept.version, "the list shown is not the list kept")
    case .nothingSaved:
        preconditionFailure("a list was kept")
    case .notRestored, .damaged:
        break
    }
    let mutator = try store.mutator(url: url, transport: NoTransport())
    let ids = mutator.pendingMutations.map(\.id)
    precondition(ids == ids.sorted() && Set(ids).count == ids.count, "pending mutations out of order: \(ids)")
    precondition(mutator.pendingMutations.allSatisfy { $0.client == client })
    precondition(view.violations.isEmpty, "\(view.violations)")
    store.forget("inbox")
}

FuzzTarget.main { bytes in
    MainActor.assumeIsolated {
        do {
            try readBack(bytes)
        } catch {
            // The file itself failing (it never should here) is the test's, not the input's.
            preconditionFailure("the store's file: \(error)")
        }
    }
}
