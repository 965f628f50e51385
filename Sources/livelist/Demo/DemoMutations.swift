import LiveListServer

/// What a client of `serve --demo` may change in the inbox: mark a conversation read or unread,
/// archive it, send a new one. The same statements for SQLite and PostgreSQL but for the clock.
enum DemoMutations {
    enum Engine { case sqlite, postgres }

    static func published(for engine: Engine) -> [PublishedMutation] {
        let now = switch engine {
        case .sqlite: "CAST(strftime('%s', 'now') AS INTEGER)"
        case .postgres: "CAST(extract(epoch FROM clock_timestamp()) AS bigint)"
        }
        return [
            PublishedMutation(name: "setUnread", parameters: [QueryParameter("id", type: .integer), QueryParameter("unread", type: .integer)],
                              statements: [.init("UPDATE conversation SET unread = :unread, version = version + 1 WHERE id = :id AND archived = 0",
                                                 mustChangeRows: true)]),
            PublishedMutation(name: "archive", parameters: [QueryParameter("id", type: .integer)],
                              statements: [.init("UPDATE conversation SET archived = 1, version = version + 1 WHERE id = :id AND archived = 0",
                                                 mustChangeRows: true)]),
            PublishedMutation(name: "send", parameters: [QueryParameter("sender", type: .text), QueryParameter("subject", type: .text)],
                              statements: [.init("""
                                  INSERT INTO conversation (sender, subject, unread, last_activity, day)
                                  VALUES (:sender, :subject, 0, \(now), \(now) / \(InboxDatabase.secondsPerDay))
                                  """)]),
        ]
    }
}
