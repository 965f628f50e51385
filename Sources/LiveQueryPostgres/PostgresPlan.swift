import LiveQueryCore
import PostgresNIO

/// How one request is read and kept, made from the catalog when the query opens
/// (`PostgresPlanner`): its tables, the statements that read the result, some of its rows, their
/// contents and the rows that meet a joined table's row, the index's layout, and whether commits
/// are applied row by row or refetch (and why).
struct PostgresPlan: Sendable {
    typealias Column = PostgresTable.Column

    /// A table of the FROM clause, in the role it plays there.
    struct Role: Sendable {
        var table: PostgresTable
        /// How the statements name it (its alias, or its name).
        var qualifier: String
    }

    /// How a joined table's changed rows reach the result rows that meet them: the base rows whose
    /// link column (in the join's parent table) holds one of the changed keys, read in the round's
    /// snapshot. The parent's link column holds its value now; a parent row whose link changed is
    /// itself a changed row of its own table, so its old partners are found through it.
    struct JoinLookup: Sendable {
        /// The role (index in ``roles``) of the joined table.
        var role: Int
        /// The joined table's key, which its changes name.
        var key: Column
        /// `SELECT <base identity>, parent.link::text FROM <base … parent> WHERE parent.link = ANY($1)`.
        var sql: String
    }

    /// A table whose rows a grouped query aggregates (GROUP BY the base table's key, the table
    /// joined by a column equal to that key): its changed rows reach the groups they belong to
    /// now (read in the round's snapshot) and belonged to before (`ChildLinks`, which the runner
    /// keeps for the groups the result holds).
    struct ChildLookup: Sendable {
        /// The role (index in ``roles``) of the aggregated table.
        var role: Int
        /// Its key, which its changes name.
        var key: Column
        /// `SELECT key::text, link::text FROM <table> WHERE key = ANY($1)`: where changed rows are now.
        var changedSQL: String
        /// `SELECT key::text, link::text FROM <table> WHERE link = ANY($1)`: the rows of some groups.
        var groupsSQL: String
    }

    /// Where a read row keeps what the index needs.
    enum RowShape: Sendable {
        /// Identity, `sorts` sort values, then the content (incremental); with `separateKey`, the
        /// base table's key first, then the identity (another column that identifies the rows).
        case positional(sorts: Int, separateKey: Bool)
        /// The SELECT's own columns, in its order: identity and section at these columns, the
        /// whole row the content (refetched).
        case named(identity: Int, section: Int?)
    }

    /// The FROM clause's tables: the base table first, then the joined ones.
    var roles: [Role]
    /// The column that identifies the result's rows.
    var identity: Column
    /// The column the base table's changes name rows by (its single-column primary key), which
    /// the re-reads and join lookups name them by too: the identity itself, or the key of a table
    /// whose rows another unique column identifies.
    var key: Column
    /// Whether the identity is an integer used as the index's row key (else a row key is
    /// assigned per key and the identity ends the sort key).
    var identityIsRowKey: Bool
    /// Whether the key is an integer, used as the index's row key itself (else a row key is
    /// assigned per key value, `RowKeys`).
    var integerKeys: Bool
    var sortColumns: [Column]
    var layout: ResultLayout
    /// How the first sort term groups rows into sections, when it does.
    var sectionRule: PostgresOrdering.Rule?
    /// The refetch reason when the result cannot be kept row by row; `nil`: incremental.
    var refetchReason: RefetchReason?
    var shape: RowShape
    var fetchSQL: String
    /// The result's rows among some identities (the last argument, text[]).
    var rereadSQL: String
    /// ``rereadSQL`` as a batch of queries that differ in their arguments reads it
    /// (`RereadBatch.template`); `nil` for a refetched query.
    var rereadBatchSQL: String?
    /// The contents of some rows (the last argument, text[]): the row's columns as for the index
    /// (for its content token), then the SELECT's columns, as the wire carries them.
    var payloadSQL: String
    /// How many columns of a payload row come before the SELECT's columns.
    var payloadOffset: Int
    /// Where the SELECT's columns start in a row of ``fetchSQL``, ``rereadSQL`` or a batch of
    /// re-reads, when they are there exactly as ``payloadSQL`` gives them (every column of a type
    /// carried as is): the rows read to follow the query then also give their contents. `nil`
    /// otherwise (a `version` column stands for the content, or a column is sent as text).
    var valuesInReads: Int?
    /// The SELECT's column names.
    var columnNames: [String]
    var arguments: PostgresBindings
    var joins: [JoinLookup]
    /// Grouped by the base table's key: the tables the groups aggregate.
    var children: [ChildLookup] = []
    /// Tables the query reads besides the FROM clause's (in subqueries): their changes refetch.
    var otherRelations: Set<UInt32>
    /// Advice (an index a join lookup lacks).
    var notes: [String]
    /// Whether the order of the result's rows is the same wherever it is read: always for a query
    /// followed row by row (the identity breaks ties); for a refetched one, when its ORDER BY ends
    /// with the identity column (else PostgreSQL returns rows that tie in no set order).
    var isTotallyOrdered = true

    /// Every table the query reads.
    var relationsRead: Set<UInt32> { otherRelations.union(roles.map(\.table.oid)) }

    /// A table the query reads, as errors name it.
    func name(of oid: UInt32) -> String {
        roles.first { $0.table.oid == oid }?.table.qualifiedName ?? "table \(oid)"
    }

    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func decode<T: PostgresDecodable>(_ row: PostgresRow, as type: T.Type) throws(PostgresLiveQueryError) -> T {
        do { return try row.decode(T.self) } catch { throw .underlying(error) }
    }

    static func decode<each T: PostgresDecodable>(_ row: PostgresRow, as types: (repeat each T).Type) throws(PostgresLiveQueryError) -> (repeat each T) {
        do { return try row.decode(types) } catch { throw .underlying(error) }
    }
}
