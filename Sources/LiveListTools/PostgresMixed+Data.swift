import Foundation
import ListTesting
import LiveListWire
import LiveQueryPostgres
import PostgresNIO

extension PostgresMixed {
    // MARK: - Data

    /// Words in several Unicode forms: precomposed and decomposed (NFC, NFD), compatibility forms
    /// (NFKC differs), Hangul syllables and jamo, other scripts, emoji.
    static let words = [
        "Caf\u{E9}", "Cafe\u{301}", "\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m", "\u{212B}ngstr\u{F6}m", "na\u{EF}ve", "nai\u{308}ve",
        "\u{FB01}le", "file", "Stra\u{DF}e", "STRASSE", "\u{D55C}\u{AD6D}\u{C5B4}", "\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}",
        "\u{395}\u{3BB}\u{3BB}\u{3B7}\u{3BD}\u{3B9}\u{3BA}\u{3AC}", "\u{65E5}\u{672C}\u{8A9E}", "party \u{1F389}", "Z\u{FC}rich", "Zu\u{308}rich",
        "\u{3A9}mega", "\u{2126}mega", "\u{FF46}\u{FF55}\u{FF4C}\u{FF4C}", "r\u{E9}sum\u{E9}", "re\u{301}sume\u{301}", "apple", "banana", "cherry",
        "delta", "echo", "fox", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "Nov", "oscar", "papa", "quebec",
    ]

    static func title(_ random: inout SeededRandomNumberGenerator) -> String {
        "\(words[Int.random(in: 0..<words.count, using: &random)]) \(words[Int.random(in: 0..<words.count, using: &random)]) "
            + String(Int.random(in: 0..<100_000, using: &random))
    }

    /// The days of 2026, as PostgreSQL reads dates.
    static let days: [String] = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return (0..<365).map { formatter.string(from: Date(timeIntervalSince1970: 1_767_225_600 + Double($0) * 86_400)) }
    }()

    static func day(_ random: inout SeededRandomNumberGenerator) -> String { days[Int.random(in: 0..<days.count, using: &random)] }

    /// The tables, made again, and their rows.
    static func load(_ connection: PostgresConnection) async throws {
        try await PostgresBenchmarks.execute(connection, "DROP TABLE IF EXISTS mixed_item, mixed_person, mixed_folder")
        try await PostgresBenchmarks.execute(connection, #"CREATE TABLE mixed_folder (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL, owner text NOT NULL)"#)
        try await PostgresBenchmarks.execute(connection, #"CREATE TABLE mixed_person (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL, team text NOT NULL)"#)
        try await PostgresBenchmarks.execute(connection, """
            CREATE TABLE mixed_item (id bigint PRIMARY KEY, title text COLLATE "C" NOT NULL, folder_id bigint NOT NULL, author_id bigint NOT NULL, \
            assignee_id bigint, day date NOT NULL, priority integer NOT NULL, done boolean NOT NULL, revision bigint NOT NULL DEFAULT 0)
            """)
        var random = SeededRandomNumberGenerator(seed: 61)
        var binds = PostgresBindings()
        var values: [String] = []
        for id in 1...folders {
            binds.append(Int64(id))
            binds.append(title(&random))
            binds.append(owners[id % owners.count])
            values.append("($\(values.count * 3 + 1), $\(values.count * 3 + 2), $\(values.count * 3 + 3))")
        }
        try await PostgresBenchmarks.execute(connection, "INSERT INTO mixed_folder VALUES " + values.joined(separator: ", "), binds)
        (binds, values) = (PostgresBindings(), [])
        for id in 1...people {
            binds.append(Int64(id))
            binds.append(title(&random))
            binds.append(teams[id % teams.count])
            values.append("($\(values.count * 3 + 1), $\(values.count * 3 + 2), $\(values.count * 3 + 3))")
        }
        try await PostgresBenchmarks.execute(connection, "INSERT INTO mixed_person VALUES " + values.joined(separator: ", "), binds)
        for batch in stride(from: 1, through: items, by: 1_000) {
            (binds, values) = (PostgresBindings(), [])
            for id in batch..<min(items + 1, batch + 1_000) {
                appendItem(Int64(id), to: &binds, &random)
                let base = values.count * 8
                values.append("(" + (1...8).map { $0 == 6 ? "$\(base + $0)::date" : "$\(base + $0)" }.joined(separator: ", ") + ")")
            }
            try await PostgresBenchmarks.execute(connection, """
                INSERT INTO mixed_item (id, title, folder_id, author_id, assignee_id, day, priority, done) VALUES \(values.joined(separator: ", "))
                """, binds)
        }
        for index in ["mixed_item (title)", "mixed_item (folder_id, title)", "mixed_item (author_id)", "mixed_item (assignee_id)",
                      "mixed_item (priority, day, title)", "mixed_item (revision DESC, id)", "mixed_folder (owner)", "mixed_person (team)"] {
            try await PostgresBenchmarks.execute(connection, "CREATE INDEX ON \(index)")
        }
        try await PostgresBenchmarks.execute(connection, "VACUUM ANALYZE mixed_item, mixed_person, mixed_folder")
    }

    /// An item's columns but its revision: id, title, folder, author, assignee (NULL for 40%),
    /// day, priority 0–4, done (25%).
    static func appendItem(_ id: Int64, to binds: inout PostgresBindings, _ random: inout SeededRandomNumberGenerator) {
        binds.append(id)
        binds.append(title(&random))
        binds.append(Int64.random(in: 1...Int64(folders), using: &random))
        binds.append(Int64.random(in: 1...Int64(people), using: &random))
        if Int.random(in: 0..<10, using: &random) < 4 { binds.appendNull() } else { binds.append(Int64.random(in: 1...Int64(people), using: &random)) }
        binds.append(day(&random))
        binds.append(Int64.random(in: 0...4, using: &random))
        binds.append(Int.random(in: 0..<4, using: &random) == 0)
    }
}
