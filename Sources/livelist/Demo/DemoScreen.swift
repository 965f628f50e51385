import Foundation
import ListDiff
import ListPresenter
import LiveQuery

/// Draws the demo: a title line, the visible rows (section headers, rows with what just changed
/// marked, inline state rows), a status line and a key help line.
@MainActor
struct DemoScreen {
    var editingFilter: String?
    var writerPaused = false

    func render(_ session: DemoSession, size: (rows: Int, columns: Int)) -> String {
        let now = ContinuousClock.now
        let width = max(20, size.columns)
        var lines: [String] = []
        let filterText = editingFilter.map { "filter: \($0)▏" } ?? (session.filter.isEmpty ? "no filter" : "filter: \(session.filter)")
        lines.append(Self.style("LiveList demo — inbox · \(session.sort.title) · \(filterText)", "1;7", width: width))

        let view = session.view
        let displayed = session.presenter.displayed
        // The rows in view only: sections are skipped by their counts, rows are never walked.
        var row = 0
        let first = view.contentOffset, last = view.contentOffset + view.viewportRows
        for section in 0..<displayed.sectionCount {
            if row >= last { break }
            let count = displayed.itemCount(inSection: section)
            if row + 1 + count <= first {
                row += 1 + count
                continue
            }
            if row >= first { lines.append(Self.header(displayed.section(at: section), sort: session.sort, width: width)) }
            row += 1
            for item in max(0, first - row)..<max(max(0, first - row), min(count, last - row)) {
                let path = ItemPath(section: section, item: item)
                let content = view.cellContent(at: path) ?? displayed.item(at: path)
                lines.append(line(for: content, isSelected: view.isSelected(path), session: session, now: now, width: width))
            }
            row += count
        }
        while lines.count < view.viewportRows + 1 { lines.append(String(repeating: " ", count: width)) }

        let (p50, p99) = session.statusCounts
        let statistics = session.cache.statistics
        let (mainP50, mainP99) = session.mainCounts
        var status = "\(session.result.count) rows · changeset p50 \(String(format: "%.2f", p50)) ms p99 \(String(format: "%.2f", p99)) ms"
        status += " · main \(String(format: "%.2f", mainP50))/\(String(format: "%.2f", mainP99)) ms"
        status += writerPaused ? " · writer paused" : " · writer on"
        status += " · \(session.batches) batches · \(statistics.pageQueries) page queries · \(statistics.cacheHits) cache hits"
        if let deleted = session.deletedBadge(now: now) { status += " · −\(deleted) deleted" }
        if let failure = session.lastFailure { status += " · error: \(failure)" }
        lines.append(Self.style(status, "7", width: width))
        let help = editingFilter != nil
            ? "type a filter · Enter apply · Esc cancel"
            : "↑↓ PgUp PgDn Home End scroll · Space select · / filter · s sort · p pause writer · q quit"
        lines.append(Self.style(help, "2", width: width))
        return "\u{1B}[H" + lines.prefix(size.rows).joined(separator: "\r\n") + "\u{1B}[0J"
    }

    private static func header(_ section: PresentedSection<LiveSection>, sort: DemoSort, width: Int) -> String {
        guard let model = section.model else { return style("", "0", width: width) }
        let title: String
        switch (sort, model.id) {
        case let (.byActivity, .integer(day)):
            title = Self.dayFormatter.string(from: Date(timeIntervalSince1970: TimeInterval(day * InboxDatabase.secondsPerDay)))
        case let (.unreadFirst, .integer(unread)): title = unread == 1 ? "Unread" : "Read"
        default: title = "All conversations"
        }
        return style("── \(title) ", "1;34", width: width, fill: "─")
    }

    private func line(for row: PresentedRow<LiveSection, LiveRow<Int64>>, isSelected: Bool, session: DemoSession, now: ContinuousClock.Instant, width: Int) -> String {
        switch row {
        case let .block(block):
            switch block.kind {
            case .loading: return Self.style("   ⏳ loading…", "33", width: width)
            case .failed: return Self.style("   ⚠ \(block.message ?? "failed") — retrying", "31", width: width)
            case .empty: return Self.style("   ∅ no conversations match", "2", width: width)
            }
        case let .item(liveRow):
            let isCursor = session.cursor == liveRow.id
            var gutter = " "
            var color = "0"
            switch session.mark(of: liveRow.id, now: now) {
            case .inserted?: gutter = "+"; color = "32"
            case .moved?: gutter = "↕"; color = "33"
            case .updated?: gutter = "*"; color = "36"
            case nil: break
            }
            let check = isSelected ? "●" : " "
            let text: String
            if let conversation = session.cache.content(of: liveRow.id, version: liveRow.version) {
                let time = Date(timeIntervalSince1970: TimeInterval(conversation.lastActivity))
                let formatter = Self.timeFormatter
                let sender = conversation.sender.padding(toLength: 18, withPad: " ", startingAt: 0)
                text = "\(conversation.isUnread ? "•" : " ") \(sender) \(conversation.subject)  \(formatter.string(from: time))"
                if conversation.isUnread && color == "0" { color = "1" }
            } else {
                text = "  ░░░░░░░░░░░░░░ loading row \(liveRow.id)…"
                color = "2"
            }
            let codes = isCursor ? color + ";7" : color
            return Self.style("\(gutter)\(check)\(text)", codes, width: width)
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
