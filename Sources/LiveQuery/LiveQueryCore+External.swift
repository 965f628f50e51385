import Foundation
import GRDB

/// Commits by other connections and processes: read from the change log when the database has
/// one covering the query's tables (``ChangeTracking``), refetched otherwise. On the writer's queue.
extension LiveQueryCore {
    /// Starts (or restarts, after a request or schema change) reading the change log, when every
    /// table the query reads is tracked.
    func followChangeLog(_ db: Database) throws {
        let wasFollowing = follower != nil
        if let previous = follower {
            do {
                try previous.uninstall(db)
            } catch {
                // The log's tables changed under it: the check below says how.
            }
            follower = nil
        }
        changeLogNote = nil
        defer { publishSummary() }
        guard options.followsChangeLog else { return }
        guard try _ChangeLogFollower.exists(db) else {
            if wasFollowing { changeLogUnavailable("the change log was dropped") }
            return
        }
        do {
            try _ChangeLogFollower.validate(db)
        } catch {
            changeLogUnavailable("\(LiveQueryError.from(error, sql: nil))")
            return
        }
        guard let follower = try _ChangeLogFollower(db, source: source, expiry: options.changeLogReaderExpiry) else { return }
        let untracked = plan.readTables.subtracting(try ChangeTracking.trackedTables(db))
        guard untracked.isEmpty else {
            changeLogNote = "\(untracked.sorted().joined(separator: ", ")) not tracked by the change log: other connections' commits refetch"
            return
        }
        if !follower.isWritable {
            changeLogNote = "the connection is read-only: this query's change-log position is not recorded, and it refetches if the log is pruned past it"
        }
        try follower.install(db)
        let position = follower.positionDue(force: true)
        self.follower = follower
        if let position {
            try _ChangeLogFollower.record(position, db)
            self.follower?.positionRecorded(position.seq)
        }
    }

    /// Says once that the log cannot be used, and why; other connections' commits refetch.
    private func changeLogUnavailable(_ reason: String) {
        changeLogNote = "the change log cannot be read (\(reason)): other connections' commits refetch"
        channel.deliver(.failure(.changeLogUnavailable(reason)))
    }

    /// Looks for commits by other connections: `true` when one was found (and applied).
    @discardableResult
    func checkExternalChanges(_ db: Database) throws -> Bool {
        guard !isStopped, build == nil else { return false }
        let start = ContinuousClock.now
        let schemaVersion = try Int.fetchOne(db, sql: "PRAGMA schema_version")
        let version = try Int.fetchOne(db, sql: "PRAGMA data_version")
        if schemaVersion != lastSchemaVersion {
            // A migration or a VACUUM (which renumbers rowids of tables without an INTEGER
            // PRIMARY KEY): TEMP triggers may be gone with a recreated table, rows may have moved.
            lastSchemaVersion = schemaVersion
            lastDataVersion = version
            try trackChanges(db)
            try refetch(db, reason: "the schema changed (a migration or VACUUM)", start: start)
            return true
        }
        guard version != lastDataVersion else {
            follower?.passOwnEntries()
            try recordPositionIfDue(db)
            if let reason = needsRecovery { try refetch(db, reason: reason, start: start) }
            return false
        }
        lastDataVersion = version
        guard var reader = follower else {
            try refetch(db, reason: changeLogNote.map { "another connection committed; \($0)" } ?? "another connection committed", start: start)
            return true
        }
        let read: _ChangeLogFollower.Read
        do {
            read = try reader.read(db)
            follower = reader
        } catch {
            // Dropped or altered by hand: say so once, and refetch from now on.
            let reason = "\(LiveQueryError.from(error, sql: nil))"
            do {
                try follower?.uninstall(db)
            } catch {
                // The log's tables are what failed: the TEMP trigger goes with the connection, the
                // reader position expires. The failure itself is delivered below.
            }
            follower = nil
            changeLogUnavailable(reason)
            publishSummary()
            try refetch(db, reason: "the change log could not be read", start: start)
            return true
        }
        switch read {
        case let .refetch(reason):
            try refetch(db, reason: reason, start: start)
        case let .entries(entries):
            try applyExternal(entries, db, start: start)
        }
        try recordPositionIfDue(db)
        return true
    }

    private func recordPositionIfDue(_ db: Database) throws {
        if let rows = follower?.ownRowsToDelete, let table = follower?.ownTable {
            try db.execute(sql: "DELETE FROM temp.\(table) WHERE rowid <= ?", arguments: [rows.upperBound])
            follower?.ownRowsDeleted(through: rows.upperBound)
        }
        guard let position = follower?.positionDue() else { return }
        try _ChangeLogFollower.record(position, db)
        follower?.positionRecorded(position.seq)
    }

    /// Turns logged keys into the base rows to re-read: the base table's rowids, and for a
    /// joined table the base rows whose foreign column equals a changed key.
    private func applyExternal(_ entries: [_ChangeLogFollower.Entry], _ db: Database, start: ContinuousClock.Instant) throws {
        let base = plan.table.lowercased()
        var rowids = Set<Int64>()
        var keys: [Int: [DatabaseValue]] = [:]
        var reason: String?
        for entry in entries {
            if entry.column == "*" {
                reason = "another connection changed \(entry.table), whose rows the change log cannot name"
                break
            }
            var followed = false
            if plan.isIncremental {
                if entry.table == base {
                    followed = true
                    if entry.column == nil, case let .integer(rowid) = entry.value { rowids.insert(rowid) }
                }
                for (number, join) in plan.joins.enumerated() where join.schema.name.lowercased() == entry.table {
                    followed = true
                    guard entry.column?.lowercased() == join.keyColumn?.lowercased() else { continue }
                    guard let value = entry.value.databaseValue else {
                        reason = "another connection changed a row of \(entry.table) whose key cannot be bound"
                        break
                    }
                    keys[number, default: []].append(value)
                }
            }
            if !followed, entry.table == base || plan.otherTables.contains(entry.table) {
                if case let .refetch(why) = plan.mode {
                    reason = "another connection committed; \(why)"
                } else {
                    reason = "another connection changed \(entry.table), which the query reads"
                }
                break
            }
        }
        if reason == nil {
            for (number, values) in keys.sorted(by: { $0.key < $1.key }) {
                let prefix = plan.joins[number].keyLookupPrefix
                for offset in stride(from: 0, to: values.count, by: 500) {
                    let batch = Array(values[offset..<min(offset + 500, values.count)])
                    let sql = prefix + Array(repeating: "?", count: batch.count).joined(separator: ",") + ")"
                    do {
                        rowids.formUnion(try Int64.fetchAll(db, sql: sql, arguments: StatementArguments(batch)))
                    } catch {
                        throw LiveQueryError.from(error, sql: sql, arguments: StatementArguments(batch))
                    }
                }
            }
            if rowids.count > options.refetchThreshold { reason = "more than \(options.refetchThreshold) rows changed in other connections' commits" }
        }
        if let reason {
            try refetch(db, reason: reason, start: start)
        } else if !rowids.isEmpty {
            touched = rowids
            defer { touched = [] }
            try applyTouchedRows(db, start: start)
        }
    }
}
