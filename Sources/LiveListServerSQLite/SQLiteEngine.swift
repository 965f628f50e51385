import GRDB
import ListDiff
import LiveListServer
import LiveListWire
import LiveQuery

/// The engine of a server over a SQLite database: its published queries are ``LiveQuery``s.
/// Commits by other processes reach subscribers when the database has a change log
/// (`ChangeTracking`); without one they are refetched. Versions are numbered by the server.
public struct SQLiteEngine: LiveQueryEngine {
    /// The database (a `DatabasePool` in WAL mode lets row reads run beside writes).
    public let database: any DatabaseWriter
    /// The live queries' options.
    public var options: LiveQueryOptions

    /// An engine over `database`.
    public init(database: any DatabaseWriter, options: LiveQueryOptions = LiveListServer.sqliteOptions) {
        self.database = database
        self.options = options
    }

    public func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
        let request: LiveQueryRequest<SQLValue>
        do {
            if case let .engineRequest(make) = query.definition {
                guard let made = try make(arguments) as? LiveQueryRequest<SQLValue> else {
                    throw WireError(sub: nil, code: .queryFailed,
                                    message: "query \"\(query.name)\" is another engine's request, not a SQLite LiveQueryRequest<SQLValue>")
                }
                request = made
            } else if let sql = try query.sql(for: arguments) {
                // Text holding NUL goes into the SQL as a literal of its bytes: GRDB would bind its part before the NUL.
                let (text, bound) = ExactArguments.inliningText(sql: sql.text, arguments: sql.arguments.mapValues(\.sql))
                request = LiveQueryRequest(sql: text, arguments: Self.statementArguments(bound), identity: sql.identity, as: SQLValue.self,
                                           section: sql.section, version: sql.version)
            } else {
                throw WireError(sub: nil, code: .queryFailed, message: "query \"\(query.name)\" has no definition")
            }
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(sub: nil, code: .badArguments, message: "\(error)")
        }
        let live = try await LiveQuery.open(request, in: database, options: options, callbackQueue: nil)
        return SQLiteServedQuery(live: live, reader: database)
    }
}

extension SQLiteEngine {
    /// `:name` placeholders' values as GRDB binds them (a name a statement does not use is left
    /// unbound; one it uses and lacks fails it with `missing statement argument`).
    static func statementArguments(_ arguments: [String: SQLValue]) -> StatementArguments {
        var bound: [String: (any DatabaseValueConvertible)?] = [:]
        for (name, value) in arguments { bound[name] = value.databaseValue }
        return StatementArguments(bound)
    }
}

/// A SQLite live query as the server publishes it.
struct SQLiteServedQuery: ServedEngineQuery {
    let live: LiveQuery<SQLValue>
    let reader: any DatabaseReader

    var columnNames: [String] { live.payloadColumnNames }

    func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] {
        try await live.exactPayloads(of: rows, reader: reader)
    }

    /// At once: SQLite's live query stops synchronously.
    func cancel() { live.cancel() }
}
