import ListDiff
import ListTesting

/// An in-memory inbox that changes like a real one: new messages move conversations to the top,
/// reads flip the unread flag, archives and deletes remove rows, and bursts change many at once.
/// The list shows it sorted by last activity (newest first), sectioned by day.
struct InboxModel {
    struct Conversation {
        var id: Int64
        var sender: String
        var subject: String
        var isUnread: Bool
        var isArchived: Bool
        /// Seconds since the epoch of the data set.
        var lastActivity: Int64
        var version: Int
    }

    typealias Row = VersionedItem<Int64, Int>
    typealias Day = VersionedItem<Int64, Int>
    typealias Snapshot = ListSnapshot<Day, Row>

    static let secondsPerDay: Int64 = 86_400
    private(set) var conversations: [Int64: Conversation] = [:]
    private var random: SeededRandomNumberGenerator
    private var nextID: Int64 = 1
    private var clock: Int64

    init(rows: Int, seed: UInt64) {
        random = SeededRandomNumberGenerator(seed: seed)
        clock = Int64(rows) * 60
        for _ in 0..<rows { addConversation(at: Int64.random(in: 0..<clock, using: &random)) }
    }

    private mutating func addConversation(at time: Int64) {
        let senders = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"]
        let subjects = ["Lunch?", "Build is red", "Quarterly numbers", "Re: design review", "Invoice", "Trip", "Release notes"]
        let conversation = Conversation(
            id: nextID, sender: senders[Int.random(in: 0..<senders.count, using: &random)],
            subject: subjects[Int.random(in: 0..<subjects.count, using: &random)],
            isUnread: Bool.random(using: &random), isArchived: false, lastActivity: time, version: 0)
        conversations[nextID] = conversation
        nextID += 1
    }

    /// Applies `count` random changes (one "transaction"); returns how many rows it touched.
    mutating func write(count: Int) -> Int {
        var touched = 0
        for _ in 0..<count {
            clock += Int64.random(in: 1...120, using: &random)
            let roll = Int.random(in: 0..<100, using: &random)
            guard let id = conversations.keys.randomElement(using: &random) else {
                addConversation(at: clock)
                touched += 1
                continue
            }
            switch roll {
            case 0..<35:
                conversations[id]?.lastActivity = clock
                conversations[id]?.isUnread = true
                conversations[id]?.version += 1
            case 35..<60:
                conversations[id]?.isUnread.toggle()
                conversations[id]?.version += 1
            case 60..<72:
                conversations[id]?.isArchived = true
            case 72..<80:
                conversations[id] = nil
            default:
                addConversation(at: clock)
            }
            touched += 1
        }
        return touched
    }

    /// The list as a fresh query would return it: not archived, newest first, by day.
    func snapshot(unreadOnly: Bool = false) -> Snapshot {
        let visible = conversations.values
            .filter { !$0.isArchived && (!unreadOnly || $0.isUnread) }
            .sorted { $0.lastActivity != $1.lastActivity ? $0.lastActivity > $1.lastActivity : $0.id < $1.id }
        var sections: [SnapshotSection<Day, Row>] = []
        for conversation in visible {
            let day = conversation.lastActivity / Self.secondsPerDay
            if sections.last?.model.id != day { sections.append(SnapshotSection(Day(id: day, version: 0), items: [])) }
            sections[sections.count - 1].items.append(Row(id: conversation.id, version: conversation.version))
        }
        return Snapshot(sections: sections)
    }
}
