import LiveQuery

/// The orders the demo cycles through with `s`.
enum DemoSort: Int, CaseIterable {
    case byActivity, bySender, unreadFirst

    var title: String {
        switch self {
        case .byActivity: "newest first, by day"
        case .bySender: "by sender"
        case .unreadFirst: "unread first"
        }
    }

    /// The live query for this order and a filter text (matched against sender and subject).
    func request(filter: String) -> LiveQueryRequest<Int64> {
        var sql = "archived = 0"
        var arguments: [String] = []
        if !filter.isEmpty {
            sql += " AND (sender LIKE ? OR subject LIKE ?)"
            arguments = ["%\(filter)%", "%\(filter)%"]
        }
        let where_ = LiveQueryRequest<Int64>.Filter(sql, arguments: .init(arguments))
        switch self {
        case .byActivity:
            return LiveQueryRequest<Int64>(table: "conversation", filter: where_,
                                    sort: [SortTerm("day", .descending), SortTerm("last_activity", .descending)],
                                    section: "day", version: "version")
        case .bySender:
            return LiveQueryRequest<Int64>(table: "conversation", filter: where_,
                                    sort: [SortTerm("sender", collation: .nocase), SortTerm("last_activity", .descending)],
                                    version: "version")
        case .unreadFirst:
            return LiveQueryRequest<Int64>(table: "conversation", filter: where_,
                                    sort: [SortTerm("unread", .descending), SortTerm("last_activity", .descending)],
                                    section: "unread", version: "version")
        }
    }

    /// The SQL a fresh query uses to check the displayed list (written out by hand on purpose).
    func oracleSQL(filter: String) -> (String, [String]) {
        var sql = "SELECT id FROM conversation WHERE archived = 0"
        var arguments: [String] = []
        if !filter.isEmpty {
            sql += " AND (sender LIKE ? OR subject LIKE ?)"
            arguments = ["%\(filter)%", "%\(filter)%"]
        }
        switch self {
        case .byActivity: sql += " ORDER BY day DESC, last_activity DESC, id"
        case .bySender: sql += " ORDER BY sender COLLATE NOCASE, last_activity DESC, id"
        case .unreadFirst: sql += " ORDER BY unread DESC, last_activity DESC, id"
        }
        return (sql, arguments)
    }
}
