import Foundation
import GRDB
import ListPresenter
import LiveListClient
import LiveListWire

/// Keeps an app's remote lists and its pending mutations in a local SQLite file, so that an app
/// launched without a network shows its last lists in its first frame — stale, with the time they
/// were held — accepts mutations as pending, and, once the server is back, resumes each list with
/// one changeset and sends the mutations in order, each applied once.
///
/// ```swift
/// import Foundation
/// import LiveListClient
/// import LiveListOffline
///
/// @MainActor
/// func launch(store: OfflineStore) throws -> (RemoteLiveQuery, RemoteMutator) {
///     let inbox = RemoteLiveQuery(url: "ws://127.0.0.1:8080/live", query: "inbox")
///     try store.keep(inbox, as: "inbox")                       // the last list, shown at once
///     let mutator = try store.mutator(url: "ws://127.0.0.1:8080/live")   // its pending mutations
///     inbox.start()
///     mutator.start()
///     return (inbox, mutator)
/// }
/// ```
///
/// What it keeps is bounded: each list's counts, sections and the rows of its window (never the
/// whole list), and at most ``RemoteMutator/maximumPending`` mutations. A list is written a
/// moment after it changes (``saveDelay``), off the main actor; a mutator's numbers and pending
/// mutations are written on the main actor before each mutation is sent.
@MainActor
public final class OfflineStore {
    /// How long after a list's change it is written (later changes within it are written with it).
    public static let saveDelay: Duration = .milliseconds(500)

    /// What ``keep(_:as:)`` found.
    public enum Restored: Sendable, Equatable {
        /// The list saved under the key, held at this time, is shown (stale).
        case restored(savedAt: Date)
        /// Nothing is saved under the key.
        case nothingSaved
        /// A list is saved under the key, but of another query or other arguments (it is
        /// replaced by this one's), or the query had started.
        case notRestored(RemoteListRestoreError)
        /// The saved list cannot be read (a damaged file): it is replaced by this one's.
        case damaged(WireDecodingError)
    }

    /// The file.
    public let path: String
    /// The last error writing a list (`nil`: the last write succeeded). A mutator's writes fail
    /// its `mutate` instead (`RemoteMutatorError.notKept`), or set its `lastKeepError`.
    public private(set) var lastSaveError: (any Error)?
    /// Kept mutations ``mutator(url:transport:)`` could not read back (a damaged file), by number:
    /// not sent again — whether the server applied them is not known here. Their numbers are not
    /// given again.
    public private(set) var unreadableMutations: [Int64] = []
    /// Kept pending changes that could not be read back: not shown (their mutations are sent).
    public private(set) var unreadableChanges = 0

    private let database: DatabaseQueue
    private var kept: [String: (query: RemoteLiveQuery, subscription: ListSourceSubscription)] = [:]
    /// Lists changed and not written yet, and whether a write waits or is under way.
    private var schedule = SaveSchedule()
    /// The delay before a write, while it runs.
    private var delay: Task<Void, Never>?
    /// The pending mutations written, by client.
    private var written: [String: Set<Int64>] = [:]
    /// The mutator of each server: one per client name, or two would give one number twice.
    private var mutators: [String: RemoteMutator] = [:]
    /// Orders the lists' writes: a write never replaces a list written from a later snapshot.
    private var lastSequence: Int64 = 0

    /// Opens (or creates) the store at `path`. A lock another connection to the file holds (an
    /// app extension, a backup) is waited for up to 5 seconds before a read or write fails with
    /// `SQLITE_BUSY`.
    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        database = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("livelist-offline-1") { db in
            try db.execute(sql: """
                CREATE TABLE livelist_offline_list (
                    key TEXT PRIMARY KEY, query TEXT NOT NULL, arguments TEXT NOT NULL, list TEXT NOT NULL, saved_at REAL NOT NULL);
                CREATE TABLE livelist_offline_mutator (url TEXT PRIMARY KEY, client TEXT NOT NULL, next_id INTEGER NOT NULL);
                CREATE TABLE livelist_offline_mutation (
                    client TEXT NOT NULL, id INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (client, id));
                """)
        }
        migrator.registerMigration("livelist-offline-2") { db in
            try db.execute(sql: """
                CREATE TABLE livelist_offline_effect (
                    client TEXT NOT NULL, id INTEGER NOT NULL, list_key TEXT NOT NULL, position INTEGER NOT NULL, change TEXT NOT NULL,
                    PRIMARY KEY (client, id, list_key, position));
                """)
        }
        migrator.registerMigration("livelist-offline-3") { db in
            try db.execute(sql: "ALTER TABLE livelist_offline_list ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0")
        }
        try migrator.migrate(database)
        lastSequence = try database.read { db in try Int64.fetchOne(db, sql: "SELECT max(sequence) FROM livelist_offline_list") ?? 0 }
    }

    /// Shows the list saved under `key` in `query` (before it starts), and from now on keeps
    /// `query`'s list there. Call it before ``RemoteLiveQuery/start()``.
    ///
    /// - Complexity: O(w + s) on the main actor for the w rows and s sections saved.
    @discardableResult
    public func keep(_ query: RemoteLiveQuery, as key: String) throws -> Restored {
        let saved = try database.read { db in
            try Row.fetchOne(db, sql: "SELECT query, arguments, list, saved_at FROM livelist_offline_list WHERE key = ?", arguments: [key])
        }
        var restored = Restored.nothingSaved
        if let saved {
            do {
                let snapshot = try RemoteListSnapshot(query: saved["query"], arguments: saved["arguments"], list: saved["list"],
                                                      savedAt: Date(timeIntervalSince1970: saved["saved_at"]))
                try query.restore(snapshot)
                restored = .restored(savedAt: snapshot.savedAt)
            } catch let error as WireDecodingError {
                restored = .damaged(error)
            } catch let error as RemoteListRestoreError {
                restored = .notRestored(error)
            }
        }
        let subscription = query.subscribe { [weak self] _ in self?.changed(key) }
        kept[key] = (query, subscription)
        return restored
    }

    /// Stops keeping the list saved under `key` (what is saved stays).
    public func forget(_ key: String) {
        kept[key]?.subscription.cancel()
        kept[key] = nil
        schedule.forgot(key)
    }

    /// A mutator for the server at `url` under this app's client name (made and kept here on
    /// the first call), numbering from where the last launch stopped, with the mutations it left
    /// pending — sent, in order, once it starts. Its numbers and pending mutations are written
    /// here before each mutation is sent, with their expected effects on the lists kept here; the
    /// effects of the mutations left pending show again on those lists (keep them first, with
    /// ``keep(_:as:)``).
    /// The same mutator for every call with one `url` while the store lives.
    public func mutator(url: String, transport: any RemoteTransport = WebSocketTransport()) throws -> RemoteMutator {
        if let mutator = mutators[url] { return mutator }
        var unreadable: [Int64] = [], unreadableChanges = 0
        let (client, nextID, pending, effects) = try database.write { db -> (String, Int64, [WireMutation], [Int64: [(String, PendingChange)]]) in
            if let row = try Row.fetchOne(db, sql: "SELECT client, next_id FROM livelist_offline_mutator WHERE url = ?", arguments: [url]) {
                let client: String = row["client"]
                var pending: [WireMutation] = []
                // Each row read alone: one damaged row costs that mutation, not the others.
                for kept in try Row.fetchAll(db, sql: "SELECT id, message FROM livelist_offline_mutation WHERE client = ? ORDER BY id", arguments: [client]) {
                    let message: String = kept["message"]
                    if case let .mutate(mutation)? = try? ClientMessage.decode(Array(message.utf8)), mutation.client == client, mutation.id == kept["id"] {
                        pending.append(mutation)
                    } else {
                        unreadable.append(kept["id"])
                    }
                }
                var effects: [Int64: [(String, PendingChange)]] = [:]
                let rows = try Row.fetchAll(db, sql: "SELECT id, list_key, change FROM livelist_offline_effect WHERE client = ? ORDER BY id, list_key, position",
                                            arguments: [client])
                for row in rows {
                    if let change = try? PendingChange(stored: row["change"]) {
                        effects[row["id"], default: []].append((row["list_key"], change))
                    } else {
                        unreadableChanges += 1
                    }
                }
                return (client, row["next_id"], pending, effects)
            }
            let client = "app-" + UUID().uuidString.lowercased()
            try db.execute(sql: "INSERT INTO livelist_offline_mutator (url, client, next_id) VALUES (?, ?, 1)", arguments: [url, client])
            return (client, 1, [], [:])
        }
        unreadableMutations = unreadable
        self.unreadableChanges = unreadableChanges
        // The unreadable rows stay counted as written: the next write deletes them with their answers' numbers.
        written[client] = Set(pending.map(\.id)).union(unreadable)
        let mutator = RemoteMutator(url: url, client: client, nextID: nextID, pending: pending, transport: transport)
        mutators[url] = mutator
        for (id, changes) in effects.sorted(by: { $0.key < $1.key }) {
            var byList: [(RemoteLiveQuery, [PendingChange])] = []
            for (key, change) in changes {
                guard let list = kept[key]?.query else { continue }
                if let last = byList.last, last.0 === list { byList[byList.count - 1].1.append(change) } else { byList.append((list, [change])) }
            }
            mutator.show(byList.map { PendingEffect($0.0, $0.1) }, forMutation: id)
        }
        mutator.onPendingChange = { [weak self, weak mutator] in
            guard let self, let mutator else { return }
            try self.write(mutator)
        }
        return mutator
    }

    /// Writes every kept list now (an app going to the background), on the main actor.
    ///
    /// - Complexity: O(w + s) for the w rows and s sections of all kept lists.
    public func save() throws {
        perform(schedule.savedAll())
        let snapshots = kept.compactMap { key, entry in entry.query.snapshot().map { (key, $0, nextSequence()) } }
        try Self.write(snapshots, to: database)
    }

    /// What the store holds for `key`, as written (for tests and diagnostics): the rows of its
    /// list and when it was held.
    public func savedList(_ key: String) throws -> RemoteListSnapshot? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT query, arguments, list, saved_at FROM livelist_offline_list WHERE key = ?", arguments: [key]) else {
                return nil
            }
            return try RemoteListSnapshot(query: row["query"], arguments: row["arguments"], list: row["list"],
                                          savedAt: Date(timeIntervalSince1970: row["saved_at"]))
        }
    }

    // MARK: Writing

    private func changed(_ key: String) {
        perform(schedule.changed(key))
    }

    /// Does what the schedule says: starts or cancels the delay, or writes lists.
    private func perform(_ actions: [SaveSchedule.Action]) {
        for action in actions {
            switch action {
            case .startDelay:
                delay = Task { [weak self] in
                    try? await Task.sleep(for: Self.saveDelay)
                    guard let self, !Task.isCancelled else { return }
                    delay = nil
                    perform(schedule.delayEnded())
                }
            case .cancelDelay:
                delay?.cancel()
                delay = nil
            case let .write(keys):
                let snapshots = keys.compactMap { key in kept[key]?.query.snapshot().map { (key, $0, nextSequence()) } }
                let database = database
                Task { [weak self] in
                    let result = await Task.detached { () -> Result<Void, any Error> in
                        Result { try Self.write(snapshots, to: database) }
                    }.value
                    guard let self else { return }
                    if case let .failure(error) = result { lastSaveError = error } else { lastSaveError = nil }
                    perform(schedule.wrote())
                }
            }
        }
    }

    private func nextSequence() -> Int64 {
        lastSequence += 1
        return lastSequence
    }

    /// Writes each snapshot unless its list was written from a later one meanwhile.
    private nonisolated static func write(_ snapshots: [(String, RemoteListSnapshot, Int64)], to database: DatabaseQueue) throws {
        let encoded = snapshots.map { key, snapshot, sequence in (key, snapshot, sequence, snapshot.encoded()) }
        try database.write { db in
            for (key, snapshot, sequence, texts) in encoded {
                try db.execute(sql: """
                    INSERT INTO livelist_offline_list (key, query, arguments, list, saved_at, sequence) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET query = excluded.query, arguments = excluded.arguments, list = excluded.list,
                        saved_at = excluded.saved_at, sequence = excluded.sequence
                    WHERE excluded.sequence > livelist_offline_list.sequence
                    """, arguments: [key, snapshot.query, texts.arguments, texts.list, snapshot.savedAt.timeIntervalSince1970, sequence])
            }
        }
    }

    /// Writes `mutator`'s next number and the changes to its pending mutations, on the main actor.
    private func write(_ mutator: RemoteMutator) throws {
        let client = mutator.client, nextID = mutator.nextID, url = mutator.url
        let pending = mutator.pendingMutations
        let before = written[client] ?? []
        let now = Set(pending.map(\.id))
        let added = pending.filter { !before.contains($0.id) }
        let removed = before.subtracting(now)
        // The effects of the new mutations on the lists kept here, by the lists' keys.
        let keys = Dictionary(kept.map { (ObjectIdentifier($0.value.query), $0.key) }, uniquingKeysWith: { first, _ in first })
        var effects: [(id: Int64, key: String, position: Int, change: String)] = []
        for mutation in added {
            var position = 0
            for effect in mutator.effects(ofMutation: mutation.id) {
                guard let key = keys[ObjectIdentifier(effect.list)] else { continue }
                for change in effect.changes {
                    effects.append((mutation.id, key, position, change.stored()))
                    position += 1
                }
            }
        }
        try database.write { db in
            try db.execute(sql: "UPDATE livelist_offline_mutator SET next_id = ? WHERE url = ? AND client = ?", arguments: [nextID, url, client])
            for id in removed {
                try db.execute(sql: "DELETE FROM livelist_offline_mutation WHERE client = ? AND id = ?", arguments: [client, id])
                try db.execute(sql: "DELETE FROM livelist_offline_effect WHERE client = ? AND id = ?", arguments: [client, id])
            }
            for mutation in added {
                try db.execute(sql: "INSERT OR REPLACE INTO livelist_offline_mutation (client, id, message) VALUES (?, ?, ?)",
                               arguments: [client, mutation.id, ClientMessage.mutate(mutation).encoded()])
            }
            for effect in effects {
                try db.execute(sql: "INSERT OR REPLACE INTO livelist_offline_effect (client, id, list_key, position, change) VALUES (?, ?, ?, ?, ?)",
                               arguments: [client, effect.id, effect.key, effect.position, effect.change])
            }
        }
        written[client] = now
    }
}
