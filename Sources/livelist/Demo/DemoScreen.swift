import Foundation

/// Draws the demo, local or remote: a title line, the visible rows (section headers, rows with
/// what just changed marked, inline state rows), a status line and a key help line.
@MainActor
struct DemoScreen {
    var editingFilter: String?
    /// The subject of a conversation being written (`c`), sent with Enter.
    var composing: String?
    var writerPaused = false

    func render(_ session: some DemoListSession, size: (rows: Int, columns: Int), title: String) -> String {
        let now = ContinuousClock.now
        let width = max(20, size.columns)
        var lines: [String] = []
        let filterText = composing.map { "new conversation: \($0)▏" }
            ?? editingFilter.map { "filter: \($0)▏" } ?? (session.filter.isEmpty ? "no filter" : "filter: \(session.filter)")
        let action = session.lastAction.map { " · \($0)" } ?? ""
        lines.append(Self.style("LiveList demo — \(title) · \(session.sort.title) · \(filterText)\(action)", "1;7", width: width))
        // The rows in view only: the list is never walked.
        for line in session.visibleLines(now: now) { lines.append(Self.line(for: line, width: width)) }
        while lines.count < session.viewportRows + 1 { lines.append(String(repeating: " ", count: width)) }

        var status = (writerPaused ? "writer paused · " : "") + session.statusDetails(now: now)
        if let failure = session.lastFailure { status += " · error: \(failure)" }
        lines.append(Self.style(status, "7", width: width))
        let help = composing != nil ? "type a subject · Enter send · Esc cancel"
            : editingFilter != nil ? "type a filter · Enter apply · Esc cancel"
            : "↑↓ PgUp PgDn Home End · Space select · e archive · u unread · c write · / filter · s sort · p pause · q quit"
        lines.append(Self.style(help, "2", width: width))
        return "\u{1B}[H" + lines.prefix(size.rows).joined(separator: "\r\n") + "\u{1B}[0J"
    }

    /// The title of a section of the list in `sort`, from its key (a day number or the unread flag).
    static func sectionTitle(sort: DemoSort, key: Int64?) -> String {
        switch (sort, key) {
        case let (.byActivity, day?):
            dayFormatter.string(from: Date(timeIntervalSince1970: TimeInterval(day * InboxDatabase.secondsPerDay)))
        case let (.unreadFirst, unread?): unread == 1 ? "Unread" : "Read"
        default: "All conversations"
        }
    }

    private static func line(for line: DemoLine, width: Int) -> String {
        switch line {
        case let .header(title): return style("── \(title) ", "1;34", width: width, fill: "─")
        case .loading: return style("   ⏳ loading…", "33", width: width)
        case let .failed(message): return style("   ⚠ \(message) — retrying", "31", width: width)
        case .empty: return style("   ∅ no conversations match", "2", width: width)
        case let .placeholder(id, failed, isCursor):
            let text = failed ? "  ⚠ row \(id) could not be loaded — retrying" : "  ░░░░░░░░░░░░░░ loading row \(id)…"
            return style(" " + text, isCursor ? "2;7" : "2", width: width)
        case let .conversation(conversation, mark, isSelected, isCursor):
            var gutter = " "
            var color = "0"
            switch mark {
            case .inserted?: gutter = "+"; color = "32"
            case .moved?: gutter = "↕"; color = "33"
            case .updated?: gutter = "*"; color = "36"
            case .pending?: gutter = "…"; color = "2"
            case nil: break
            }
            let check = isSelected ? "●" : " "
            let time = Date(timeIntervalSince1970: TimeInterval(conversation.lastActivity))
            let sender = conversation.sender.padding(toLength: 18, withPad: " ", startingAt: 0)
            let text = "\(conversation.isUnread ? "•" : " ") \(sender) \(conversation.subject)  \(timeFormatter.string(from: time))"
            if conversation.isUnread && color == "0" { color = "1" }
            return style("\(gutter)\(check)\(text)", isCursor ? color + ";7" : color, width: width)
        }
    }

    private static let dayFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "EEEE d MMMM yyyy"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()

    private static let timeFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()

    static func style(_ text: String, _ codes: String, width: Int, fill: Character = " ") -> String {
        var clipped = String(text.prefix(width))
        let padding = width - clipped.count
        if padding > 0 { clipped += String(repeating: fill, count: padding) }
        return "\u{1B}[\(codes)m\(clipped)\u{1B}[0m"
    }
}
