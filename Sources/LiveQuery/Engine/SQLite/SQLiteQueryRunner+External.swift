import Foundation
import GRDB
import LiveQueryCore

/// Commits by other connections and processes: read from the change log when the database has
/// one covering the query's tables (``ChangeTracking``), refetched otherwise. On the writer's queue.
extension SQLiteQueryRunner {
    /// Starts (or restarts, after a request or schema change) reading the change log, when every
    /// table the query reads is tracked: from `start` when given (where the log stood before the
    /// fetch the query now shows), else from its current end.
    func followChangeLog(_ db: Database, from start: ChangeLogFollower.Start?) throws {
        let wasFollowing = follower != nil
        if let previous = follower {
            do {
                try previous.uninstall(db)
            } catch {
                // The log's tables changed under it: the check below says how.
            }
            follower = nil
        }
        changeLogStatus = nil
        defer { publishSummary() }
        guard options.followsChangeLog else { return }
        guard try ChangeLogFollower.exists(db) else {
            // LiveList's triggers left without their log make every write to their tables fail.
            let orphaned = try ChangeTracking.trackedTables(db).sorted()
            if !orphaned.isEmpty {
                changeLogUnavailable(ChangeTracking.orphanedTriggers(orphaned))
            } else if wasFollowing {
                changeLogUnavailable("the change log was dropped")
            }
            return
        }
        do {
            try ChangeLogFollower.validate(db)
        } catch {
            changeLogUnavailable("\(LiveQueryError.from(error, sql: nil))")
            return
        }
        guard let follower = try ChangeLogFollower(db, source: source, expiry: options.changeLogReaderExpiry, from: start) else { return }
        let untracked = plan.readTables.subtracting(try ChangeTracking.trackedTables(db))
        guard untracked.isEmpty else {
            changeLogStatus = .untracked(untracked.sorted())
            return
        }
        if !follower.isWritable {
            changeLogStatus = .readOnly
        }
        try follower.install(db)
        let position = follower.positionDue(force: true)
        self.follower = follower
        if let position {
            try ChangeLogFollower.record(position, db)
            self.follower?.positionRecorded(position.seq)
        }
    }

    /// Says once that the log cannot be used, and why; other connections' commits refetch.
    private func changeLogUnavailable(_ reason: String) {
        changeLogStatus = .unavailable(reason)
        channel.deliver(.failure(.changeLogUnavailable(reason)))
    }

    /// Looks for commits by other connections: `true` when one was found (and applied).
    /// A failure leaves the query behind (its next commit or poll refetches) and is thrown.
    @discardableResult
    func checkExternalChanges(_ db: Database) throws -> Bool {
        guard tracker.state.looksForOtherCommits else { return false }
        do {
            return try lookForExternalChanges(db)
        } catch {
            tracker.state.failed()
            throw error
        }
    }

    private func lookForExternalChanges(_ db: Database) throws -> Bool {
        let start = ContinuousClock.now
        let schemaVersion = try Int.fetchOne(db, sql: "PRAGMA schema_version")
        let version = try Int.fetchOne(db, sql: "PRAGMA data_version")
        if schemaVersion != lastSchemaVersion {
            // A migration or a VACUUM (which renumbers rowids of tables without an INTEGER
            // PRIMARY KEY): TEMP triggers may be gone with a recreated table, rows may have moved.
            lastSchemaVersion = schemaVersion
            lastDataVersion = version
            try trackChanges(db, logFrom: nil)
            try tracker.refetch(reads(db), reason: .schemaChanged, start: start)
            return true
        }
        guard version != lastDataVersion else {
            follower?.passOwnEntries()
            try recordPositionIfDue(db)
            try carryOut(tracker.state.nothingCommittedElsewhere(), db, start: start)
            return false
        }
        lastDataVersion = version
        guard var reader = follower else {
            try tracker.refetch(reads(db), reason: .anotherConnection(changeLogStatus?.refetch ?? .noChangeLog), start: start)
            return true
        }
        let read: ChangeLogFollower.Read
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
            try tracker.refetch(reads(db), reason: .anotherConnection(.changeLogUnavailable), start: start)
            return true
        }
        switch read {
        case let .refetch(reason):
            try tracker.refetch(reads(db), reason: .anotherConnection(reason), start: start)
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
        try ChangeLogFollower.record(position, db)
        follower?.positionRecorded(position.seq)
    }

    /// Turns logged keys into the base rows to re-read: the base table's rowids, and for a
    /// joined table the base rows whose foreign column equals a changed key.
    private func applyExternal(_ entries: [ChangeLogFollower.Entry], _ db: Database, start: ContinuousClock.Instant) throws {
        let base = plan.table.lowercased()
        var rowids = Set<Int64>()
        var keys: [Int: [DatabaseValue]] = [:]
        var reason: RefetchReason.ExternalCommit?
        for entry in entries {
            if entry.column == "*" {
                reason = .unnamedRows(table: entry.table)
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
                        reason = .unboundKey(table: entry.table)
                        break
                    }
                    keys[number, default: []].append(value)
                }
            }
            if !followed, entry.table == base || plan.otherTables.contains(entry.table) {
                if case let .refetch(shapes) = plan.mode {
                    reason = .request(shapes)
                } else {
                    reason = .tableChanged(entry.table)
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
            if rowids.count > options.refetchThreshold { reason = .tooManyRowsChanged(threshold: options.refetchThreshold) }
        }
        if let reason {
            try tracker.refetch(reads(db), reason: .anotherConnection(reason), start: start)
        } else {
            try carryOut(tracker.state.committedElsewhere(touching: rowids), db, start: start)
        }
    }
}
