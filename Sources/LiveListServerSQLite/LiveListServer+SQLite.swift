import GRDB
import LiveListServer
import LiveListWire
import LiveQuery
import Logging

extension LiveListServer {
    /// The live queries' options a server over SQLite uses unless told otherwise: other
    /// processes' commits are looked for every 250 ms (and seen at once through the change log
    /// and file watches, see `LiveQueryOptions`).
    public static let sqliteOptions = LiveQueryOptions(dataVersionPollInterval: .milliseconds(250))

    /// A server of `queries` over `database` (a `DatabasePool` in WAL mode lets payload reads run
    /// beside writes), with ``SQLiteEngine`` and its live queries' `options`. Commits by other
    /// processes reach subscribers when the database has a change log (`ChangeTracking`); without
    /// one they are refetched. `mutations` run in `database`, once per (client, number).
    public convenience init(database: any DatabaseWriter, queries: [PublishedQuery], mutations: [PublishedMutation] = [],
                            options: LiveQueryOptions = LiveListServer.sqliteOptions,
                            configuration: Configuration = Configuration(), logger: Logger = Logger(label: "livelist.server")) {
        self.init(engine: SQLiteEngine(database: database, options: options), queries: queries, mutations: mutations,
                  configuration: configuration, logger: logger)
    }
}

extension PublishedQuery {
    /// Publishes a SQLite request made from the arguments (one for each parameter, by name): a
    /// GRDB-built request, say, whose shape depends on them. ``SQLiteEngine`` serves it; an
    /// engine of another database refuses it with `queryFailed`.
    public init(name: String, parameters: [QueryParameter] = [],
                request: @escaping @Sendable (_ arguments: [String: WireValue]) throws -> LiveQueryRequest<SQLValue>) {
        self.init(name: name, parameters: parameters, definition: .engineRequest(request))
    }
}
