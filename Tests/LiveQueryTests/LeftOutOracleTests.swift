import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Identities that repeat or do not decode, coming and going under random transactions: after
/// every commit the list equals the SELECT minus exactly the rows the result reports as left out
/// — one shown row per identity the SELECT holds, in the SELECT's order — and every changeset
/// passes the strict headless view.
@Suite(.timeLimit(.minutes(3)))
@MainActor
struct LeftOutOracleTests {
    struct Selected {
        var rowid: Int64
        var identity: SQLValue
        var name: String
    }

    @Test("duplicate and NULL identities coming and going: the list is the SELECT minus exactly the rows reported left out", arguments: [UInt64(7), 4242])
    func leftOutFollowsTheSelect(seed: UInt64) async throws {
        print("LeftOutOracleTests seed \(seed)")
        let queue = try DatabaseQueue(path: try TestDatabase.path(), configuration: TestDatabase.patient)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, name TEXT)")
            var random = SeededRandomNumberGenerator(seed: seed)
            for id in 1...30 { try Self.insert(db, id: Int64(id), &random) }
        }
        let sql = "SELECT t.* FROM t ORDER BY t.name"
        let log = EventLog<String>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: sql, identity: "upper(t.k)", as: String.self), in: queue,
                                             options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        #expect(query.mode == .incremental)
        let harness = OracleHarness(query.initialResult, expected: try await Self.expected(query.initialResult, queue))
        var comebacks = 0
        for step in 0..<150 {
            let before = query.latestResult.leftOut.duplicateIdentities.count
            let rollback = step % 11 == 5
            _ = try await randomTransaction(on: queue, operations: step % 3 + 1, seed: seed &* 1_000 &+ UInt64(step), rollback: rollback) { db, random in
                let id = Int64.random(in: 1...40, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: try db.execute(sql: "DELETE FROM t WHERE id = ?", arguments: [id])
                case 1: try db.execute(sql: "UPDATE t SET k = ? WHERE id = ?", arguments: [Self.key(&random), id])
                case 2: try db.execute(sql: "UPDATE t SET name = ? WHERE id = ?", arguments: [Self.name(&random), id])
                case 3: try db.execute(sql: "REPLACE INTO t VALUES (?, ?, ?)", arguments: [id, Self.key(&random), Self.name(&random)])
                default: try Self.insert(db, id: nil, &random)
                }
            }
            let result = query.latestResult
            if result.leftOut.duplicateIdentities.count < before { comebacks += 1 }
            let expected = try await Self.expected(result, queue)
            guard harness.step(expecting: expected, events: log.drain(), rolledBack: rollback, context: "seed \(seed), step \(step)"),
                  harness.check("seed \(seed), step \(step)") else { return }
        }
        #expect(comebacks > 5, "rows left out came back \(comebacks) times")
    }

    nonisolated static func key(_ random: inout SeededRandomNumberGenerator) -> String? {
        ["a", "A", "b", "B", "c", nil, "d", "e"][Int.random(in: 0..<8, using: &random)]
    }

    nonisolated static func name(_ random: inout SeededRandomNumberGenerator) -> String {
        ["w", "x", "y", "z", "é", "e\u{301}"][Int.random(in: 0..<6, using: &random)]
    }

    nonisolated static func insert(_ db: Database, id: Int64?, _ random: inout SeededRandomNumberGenerator) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO t VALUES (?, ?, ?)", arguments: [id, key(&random), name(&random)])
    }

    /// The SELECT now, checked against `result`: the rows it shows must be the SELECT's rows with
    /// one row per identity, in order, and the rows left out exactly the others. Returns the shown
    /// rows as the oracle's expectation.
    static func expected(_ result: LiveResult<String>, _ queue: DatabaseQueue) async throws -> [OracleRow] {
        let rows = try await queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, upper(k) AS identity, name FROM t ORDER BY name, upper(k), id").map {
                Selected(rowid: $0["id"], identity: SQLValue($0["identity"] as DatabaseValue), name: $0["name"])
            }
        }
        let shown = result.rows(in: 0..<result.count).map(\.id)
        // The rows behind the shown items (which of two duplicates is shown depends on history).
        let shownRowids = (0..<result.count).map { result.storage.rows.element(at: $0).rowid }
        // Identities, NULLs and repeats, as SQLite returns them.
        let nulls = rows.filter { $0.identity.isNull }.count
        let distinct = Set(rows.compactMap { $0.identity.isNull ? nil : $0.identity })
        #expect(result.leftOut.invalidIdentities.count == nulls)
        #expect(shown.count == distinct.count, "one row per identity: shown \(shown.count), distinct \(distinct.count)")
        #expect(result.leftOut.duplicateIdentities.count == rows.count - nulls - distinct.count)
        #expect(Set(shown).count == shown.count)
        // The shown rows are the SELECT's, in its order (ORDER BY name, then the identity and the
        // rowid — the live query's tie-breaks), with the identity SQLite returns for them.
        var matched: [OracleRow] = []
        var next = rows.startIndex
        for (id, rowid) in zip(shown, shownRowids) {
            guard let index = rows[next...].firstIndex(where: { $0.rowid == rowid }), rows[index].identity == .text(SQLText(id)) else {
                Issue.record("row \(rowid) (\(id)) is not in the SELECT after the rows shown before it, or has another identity")
                return matched
            }
            let row = rows[index]
            matched.append(OracleRow(identity: row.identity, section: .null, content: "\(row.rowid)|\(row.name)"))
            next = index + 1
        }
        return matched
    }
}
