import GRDB
import ListTesting

/// The write the `live.*`, `e2e.*` and `live.external.*` benchmarks time: one row of `item`
/// takes a new name and enters the filter, so it moves (or enters the result) and its content
/// changes.
struct ItemUpdate: Sendable {
    var id: Int64
    var name: String

    /// A random row of a table of `rows` rows, and a random name.
    static func random(rows: Int, _ random: inout SeededRandomNumberGenerator) -> ItemUpdate {
        let id = Int64.random(in: 1...Int64(rows), using: &random)
        return ItemUpdate(id: id, name: LiveQueryBenchmarks.randomName(&random))
    }

    func run(_ db: Database) throws {
        try db.execute(sql: "UPDATE item SET name = ?, flag = 1, version = version + 1 WHERE id = ?", arguments: [name, id])
    }
}
