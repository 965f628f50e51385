import GRDB
import LiveListServer

/// What a client of `serve --demo` may change in the inbox: mark a conversation read or unread,
/// archive it, send a new one. The same statements for SQLite and PostgreSQL but for the clock;
/// the local demo runs the SQLite ones itself.
enum DemoMutations {
    enum Engine { case sqlite, postgres }

    static func published(for engine: Engine) -> [PublishedMutation] {
        let now = switch engine {
        case .sqlite: "CAST(strftime('%s', 'now') AS INTEGER)"
        case .postgres: "CAST(extract(epoch FROM clock_timestamp()) AS bigint)"
        }
        // A client may choose the new conversation's identity (to show it pending under the
        // identity the server will give it); without one, the database numbers it.
        let id = switch engine {
        case .sqlite: ":id"
        case .postgres: "COALESCE(CAST(:id AS bigint), nextval(pg_get_serial_sequence('conversation', 'id')))"
        }
        return [
            PublishedMutation(name: "setUnread", parameters: [QueryParameter("id", type: .integer), QueryParameter("unread", type: .integer)],
                              statements: [.init("UPDATE conversation SET unread = :unread, version = version + 1 WHERE id = :id AND archived = 0",
                                                 mustChangeRows: true)]),
            PublishedMutation(name: "archive", parameters: [QueryParameter("id", type: .integer)],
                              statements: [.init("UPDATE conversation SET archived = 1, version = version + 1 WHERE id = :id AND archived = 0",
                                                 mustChangeRows: true)]),
            PublishedMutation(name: "send", parameters: [QueryParameter("sender", type: .text), QueryParameter("subject", type: .text),
                                                         QueryParameter("id", type: .integer, default: .null)],
                              statements: [.init("""
                                  INSERT INTO conversation (id, sender, subject, unread, last_activity, day)
                                  VALUES (\(id), :sender, :subject, 0, \(now), \(now) / \(InboxDatabase.secondsPerDay))
                                  """)]),
        ]
    }

    /// Runs mutation `name`'s statements over the local demo's database, in one transaction, with
    /// `arguments` bound by name; `false` when a statement that must change a row changed none.
    static func run(_ name: String, arguments given: [String: DatabaseValueConvertible], in database: DatabaseQueue) throws -> Bool {
        guard let mutation = published(for: .sqlite).first(where: { $0.name == name }),
              case let .statements(statements) = mutation.definition else { throw UnknownMutation(name: name) }
        var arguments = given
        for parameter in mutation.parameters where arguments[parameter.name] == nil && parameter.defaultValue == .null {
            arguments[parameter.name] = DatabaseValue.null
        }
        do {
            try database.write { db in
                for statement in statements {
                    try db.execute(sql: statement.sql, arguments: StatementArguments(arguments))
                    // Thrown inside the transaction: it rolls back, as the server's would.
                    if statement.mustChangeRows, db.changesCount == 0 { throw Unchanged() }
                }
            }
            return true
        } catch is Unchanged {
            return false
        }
    }

    private struct Unchanged: Error {}

    /// A name the demo does not publish.
    struct UnknownMutation: Error, CustomStringConvertible {
        let name: String
        var description: String { "the demo publishes no mutation \"\(name)\"" }
    }
}
