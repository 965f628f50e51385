import Foundation
import GRDB
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The plan's choice of how to fetch a large result: scanning the base table and letting SQLite
/// sort beats walking an index that serves the ORDER BY but not the columns (a table lookup per
/// row) when the result is a large share of the table — 1M rows: 330 ms against 700 ms.
struct QueryPlanTests {
    static func database() async throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        try await queue.write { db in
            try db.execute(sql: """
                CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, flag INTEGER NOT NULL, contact_id INTEGER, body TEXT);
                CREATE TABLE contact(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE, name TEXT);
                WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM n WHERE value < 100)
                INSERT INTO contact(id, uuid, name) SELECT value, 'u' || value, 'c' || value FROM n;
                WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM n WHERE value < 20000)
                INSERT INTO item(name, flag, contact_id, body) SELECT 'n' || (value * 7919 % 20000), value % 2, value % 100 + 1, 'b' FROM n;
                CREATE INDEX item_flag_name ON item(flag, name);
                """)
        }
        return queue
    }

    @Test("a large share of the table, ordered through an index that does not cover the columns: scan and sort — for a table request and a join, aliased or not")
    func prefersScanForLargeResults() async throws {
        let queue = try await Self.database()
        let requests: [LiveQueryRequest<Int64>] = [
            LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")]),
            LiveQueryRequest(sql: "SELECT item.*, contact.name FROM item JOIN contact ON contact.id = item.contact_id WHERE item.flag = 1 ORDER BY item.name"),
            LiveQueryRequest(sql: "SELECT i.*, c.name FROM item AS i LEFT JOIN contact AS c ON c.id = i.contact_id WHERE i.flag = ? ORDER BY i.name", arguments: [1]),
        ]
        for request in requests {
            let prefers = try await queue.read { db in try QueryPlan(request, db).prefersTableScan(db) }
            #expect(prefers, "\(request)")
        }
        // A small share (one name): the index wins.
        let small = LiveQueryRequest<Int64>(table: "item", filter: .init("flag = 1 AND name = 'n7919'"), sort: [SortTerm("name")])
        let prefersSmall = try await queue.read { db in try QueryPlan(small, db).prefersTableScan(db) }
        #expect(!prefersSmall)
    }
}
