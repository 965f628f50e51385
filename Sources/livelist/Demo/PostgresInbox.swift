import Foundation
import ListTesting
import LiveListCommands
import LiveListServer
import LiveListWire
import Logging
import PostgresNIO

/// The inbox demo over PostgreSQL (`livelist serve --demo --postgres URL`): the same conversations
/// as the SQLite demo's, a writer that changes them the same way, and the same published query.
enum PostgresInbox {
    static let logger = Logger(label: "livelist.demo.postgres")

    static func connect(_ configuration: PostgresConnection.Configuration) async throws(InputError) -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(configuration: configuration, id: 90, logger: logger)
        } catch {
            throw InputError("cannot connect to PostgreSQL: \(String(reflecting: error))")
        }
    }

    /// Creates and fills the `conversation` table when missing; an existing one must have the demo's columns.
    static func prepare(_ configuration: PostgresConnection.Configuration, rows: Int) async throws(InputError) {
        let connection = try await connect(configuration)
        defer { Task { try? await connection.close() } }
        do {
            let columns = try await strings(connection, """
                SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass('conversation') AND attnum > 0 AND NOT attisdropped
                """)
            if !columns.isEmpty {
                guard Set(columns).isSuperset(of: ["id", "sender", "subject", "unread", "archived", "last_activity", "day", "version"]) else {
                    throw InputError("the database has a conversation table without the demo's columns")
                }
                return
            }
            let senders = "ARRAY[" + InboxDatabase.senders.map(literal).joined(separator: ", ") + "]"
            let subjects = "ARRAY[" + InboxDatabase.subjects.map(literal).joined(separator: ", ") + "]"
            let now = Int64(Date().timeIntervalSince1970)
            for statement in [
                """
                CREATE TABLE conversation (
                    id bigserial PRIMARY KEY, sender text COLLATE "C" NOT NULL, subject text NOT NULL, unread integer NOT NULL,
                    archived integer NOT NULL DEFAULT 0, last_activity bigint NOT NULL, day bigint NOT NULL, version integer NOT NULL DEFAULT 0)
                """,
                """
                INSERT INTO conversation (sender, subject, unread, last_activity, day)
                SELECT (\(senders))[1 + (g * 7919) % \(InboxDatabase.senders.count)], (\(subjects))[1 + (g * 104729) % \(InboxDatabase.subjects.count)],
                       CASE WHEN (g * 31) % 4 = 0 THEN 1 ELSE 0 END, t, t / \(InboxDatabase.secondsPerDay)
                FROM generate_series(1, \(rows)) g, LATERAL (SELECT \(now) - (g::bigint * 2654435761) % \(60 * InboxDatabase.secondsPerDay) AS t) s
                """,
                "CREATE INDEX conversation_inbox ON conversation (archived, day, last_activity)",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        } catch let error as InputError {
            throw error
        } catch {
            throw InputError("cannot create the demo's conversation table: \(String(reflecting: error))")
        }
    }

    private static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    private static func strings(_ connection: PostgresConnection, _ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) { values.append(value) }
        return values
    }

    /// The demo's published query: the inbox, sorted by day, sender or unread, filtered by text in
    /// the sender or the subject.
    static var inbox: PublishedQuery {
        PublishedQuery(name: "inbox", parameters: [
            QueryParameter("sort", type: .text, default: .text("activity")),
            QueryParameter("filter", type: .text, default: .text("")),
        ]) { arguments in
            let (order, section) = switch arguments["sort"] {
            case .text("sender")?: ("sender, last_activity DESC, id", nil as String?)
            case .text("unread")?: ("unread DESC, last_activity DESC, id", "unread")
            default: ("day DESC, last_activity DESC, id", "day")
            }
            var filter = ""
            var bound: [String: WireValue] = [:]
            if case let .text(text)? = arguments["filter"], !text.isEmpty {
                filter = " AND (sender ILIKE :pattern OR subject ILIKE :pattern)"
                bound["pattern"] = .text("%\(text)%")
            }
            return PublishedQuery.SQL("SELECT id, sender, subject, unread, last_activity, day, version FROM conversation WHERE archived = 0\(filter) ORDER BY \(order)",
                                      arguments: bound, section: section, version: "version")
        }
    }
}

/// Makes live changes to the PostgreSQL inbox at a steady rate, with a burst every tenth tick, as
/// the SQLite demo's writer does.
final class PostgresDemoWriter: Sendable {
    private let task: Task<Void, Never>

    init(configuration: PostgresConnection.Configuration, writesPerSecond: Int, seed: UInt64) {
        let perTick = max(1, writesPerSecond / 10)
        task = Task.detached {
            var random = SeededRandomNumberGenerator(seed: seed &+ 1)
            var connection: PostgresConnection?
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                if Task.isCancelled { break }
                tick += 1
                do {
                    let open: PostgresConnection
                    if let connection, !connection.isClosed {
                        open = connection
                    } else {
                        open = try await PostgresConnection.connect(configuration: configuration, id: 91, logger: PostgresInbox.logger)
                        connection = open
                    }
                    try await Self.write(open, count: tick % 10 == 0 ? perTick * 20 : perTick, random: &random)
                } catch {
                    // The server is away or refused: the next tick tries again on a new connection.
                    PostgresInbox.logger.warning("demo writer: \(error)")
                    try? await connection?.close()
                    connection = nil
                }
            }
            try? await connection?.close()
        }
    }

    /// One transaction of `count` changes, as `InboxDatabase.write` makes them.
    private static func write(_ connection: PostgresConnection, count: Int, random: inout SeededRandomNumberGenerator) async throws {
        let now = Int64(Date().timeIntervalSince1970)
        var statements: [String] = []
        for _ in 0..<count {
            let pick = "(SELECT id FROM conversation WHERE id >= \(random.next() % 1_000_000_000) % (SELECT coalesce(max(id), 1) FROM conversation) ORDER BY id LIMIT 1)"
            switch random.next() % 100 {
            case 0..<35:
                statements.append("UPDATE conversation SET last_activity = \(now), day = \(now / InboxDatabase.secondsPerDay), unread = 1, version = version + 1 WHERE id = \(pick)")
            case 35..<60:
                statements.append("UPDATE conversation SET unread = 1 - unread, version = version + 1 WHERE id = \(pick)")
            case 60..<72:
                statements.append("UPDATE conversation SET archived = 1, version = version + 1 WHERE id = \(pick)")
            case 72..<80:
                statements.append("DELETE FROM conversation WHERE id = \(pick)")
            default:
                let sender = InboxDatabase.senders[Int(random.next() % UInt64(InboxDatabase.senders.count))]
                let subject = InboxDatabase.subjects[Int(random.next() % UInt64(InboxDatabase.subjects.count))]
                statements.append("INSERT INTO conversation (sender, subject, unread, last_activity, day) VALUES ('\(sender.replacingOccurrences(of: "'", with: "''"))', '\(subject.replacingOccurrences(of: "'", with: "''"))', 1, \(now), \(now / InboxDatabase.secondsPerDay))")
            }
        }
        try await connection.query(PostgresQuery(unsafeSQL: "BEGIN"), logger: PostgresInbox.logger)
        do {
            for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresInbox.logger) }
            try await connection.query(PostgresQuery(unsafeSQL: "COMMIT"), logger: PostgresInbox.logger)
        } catch {
            _ = try? await connection.query(PostgresQuery(unsafeSQL: "ROLLBACK"), logger: PostgresInbox.logger)
            throw error
        }
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}
