import GRDB
import GRDBSQLite
import LiveQueryCore

/// The SQL functions a connection knows, as SQLite reports them (`pragma_function_list`): which
/// names aggregate, with how many arguments, and which scalar functions SQLite does not flag
/// deterministic. Read from the connection, so a function the app registers
/// (`db.add(function:)` in GRDB) counts like a built-in one.
struct SQLFunctions: Sendable {
    /// One registration of a name: SQLite keeps one per argument count (and text encoding).
    struct Variant: Sendable, Hashable {
        /// An aggregate or window function (types `a` and `w`: the built-in aggregates are
        /// window functions too), or a scalar one (type `s`).
        var isAggregate: Bool
        /// How many arguments it takes; -1 for any number.
        var argumentCount: Int
        var isDeterministic: Bool
    }

    /// The variants of each name, lower-cased.
    var variants: [String: [Variant]]

    init(variants: [String: [Variant]]) {
        self.variants = variants
    }

    /// Deterministic aggregates called `names` (lower-cased), with any number of arguments.
    init(aggregates names: Set<String>) {
        variants = Dictionary(uniqueKeysWithValues: names.map { ($0, [Variant(isAggregate: true, argumentCount: -1, isDeterministic: true)]) })
    }

    static let listSQL = "SELECT name, type, narg, flags FROM pragma_function_list"

    /// The functions of `db`'s connection.
    static func read(_ db: Database) throws -> SQLFunctions {
        var variants: [String: [Variant]] = [:]
        for row in try Row.fetchAll(db, sql: listSQL) {
            guard let name: String = row["name"] else { continue }
            let type: String = row["type"] ?? "s"
            let flags: Int64 = row["flags"] ?? 0
            variants[name.lowercased(), default: []].append(Variant(
                isAggregate: type != "s", argumentCount: row["narg"] ?? -1, isDeterministic: flags & Int64(SQLITE_DETERMINISTIC) != 0))
        }
        return SQLFunctions(variants: variants)
    }

    /// Whether `name(…)` with `argumentCount` arguments aggregates. SQLite picks the variant that
    /// takes exactly that many arguments over one that takes any number, so `min(a)` aggregates
    /// and `min(a, b)` compares; when several variants fit equally, any aggregate among them
    /// makes the answer yes (a refetch is always correct).
    func isAggregate(_ name: String, argumentCount: Int) -> Bool {
        guard let variants = variants[name.lowercased()] else { return false }
        let fitting = variants.filter { $0.argumentCount == argumentCount || $0.argumentCount < 0 }
        let exact = fitting.filter { $0.argumentCount == argumentCount }
        return (exact.isEmpty ? fitting : exact).contains(where: \.isAggregate)
    }

    /// The names with a scalar variant SQLite does not flag deterministic (`random`, `changes`…).
    /// Aggregates are left out, though SQLite does not flag them: the rows they read decide
    /// them, and those rows are the query's to track.
    var nondeterministicScalars: Set<String> {
        Set(variants.filter { $0.value.contains { !$0.isAggregate && !$0.isDeterministic } }.keys)
    }
}
