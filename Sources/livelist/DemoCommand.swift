import ArgumentParser
import Foundation
import GRDB
import ListDiff
import ListTesting
import LiveListTools
import LiveQuery
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGTERM/SIGHUP so the screen loop restores the terminal before leaving.
nonisolated(unsafe) private var terminationRequested: sig_atomic_t = 0

/// `livelist demo`: a live terminal list over an embedded SQLite inbox that keeps changing.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A live list over a changing SQLite inbox, in the terminal.",
        discussion: """
            Keys: ↑↓ PgUp PgDn Home End scroll, Space selects, / edits the filter, s cycles the sort, p pauses the writer, q quits.
            With --headless (automatic when stdout is not a terminal) a scripted viewport runs for --duration seconds, one line is
            printed per applied batch, and the last line is: demo: B batches, C changes, I inconsistencies, p50 X ms, p99 Y ms.
            """
    )

    @Option(help: "A database file to use (created with the demo schema when missing).") var db: String?
    @Option(help: "Conversations to generate in a new database.") var rows = 100_000
    @Option(help: "Seed of the generated data and of the writer.") var seed: UInt64 = 1
    @Option(help: "Changes the writer makes per second.") var writesPerSecond = 40
    @Option(help: "Seconds to run in headless mode.") var duration: Double = 10
    @Flag(help: "Run the scripted, non-interactive demo.") var headless = false

    func validate() throws {
        guard rows >= 0 else { throw ValidationError("--rows must not be negative") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        guard writesPerSecond > 0 else { throw ValidationError("--writes-per-second must be positive") }
    }

    func run() throws {
        let path: String
        if let db {
            path = db
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-demo-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("inbox.sqlite").path
        }
        let database = try InboxDatabase.open(path: path, rows: rows, seed: seed)
        let interactive = !headless && isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1
        let writesPerSecond = writesPerSecond, seed = seed, duration = duration
        let code = try MainActor.assumeIsolated {
            interactive
                ? try Self.runInteractive(database: database, writesPerSecond: writesPerSecond, seed: seed)
                : try Self.runHeadless(database: database, writesPerSecond: writesPerSecond, seed: seed, duration: duration)
        }
        if code != 0 { throw ExitCode(code) }
    }

    @MainActor
    static func runHeadless(database: DatabaseQueue, writesPerSecond: Int, seed: UInt64, duration: Double) throws -> Int32 {
        let session = try DemoSession(database: database, viewportRows: 30)
        let writer = DemoWriter()
        writer.start(database: database, writesPerSecond: writesPerSecond, seed: seed)
        var random = SeededRandomNumberGenerator(seed: seed &+ 2)
        let ticks = max(3, Int(duration * 10))
        for tick in 1...ticks {
            Thread.sleep(forTimeInterval: 0.1)
            for line in session.applyEvents() { print(line) }
            // The scripted viewport: scroll, select, change the filter and the sort.
            if tick % 5 == 0 { session.view.setContentOffset(Int.random(in: 0...max(0, min(2_000, session.view.maximumContentOffset)), using: &random)) }
            if tick % 7 == 0, let path = session.view.visibleItems.randomElement(using: &random),
               let id = session.presenter.displayed.itemIfPresent(at: path)?.item?.id {
                session.presenter.selectItem(id: id)
            }
            if tick == ticks / 3 {
                print("script: filter \"a\"")
                session.setCriteria(sort: session.sort, filter: "a")
            }
            if tick == 2 * ticks / 3 {
                print("script: sort \(DemoSort.bySender.title)")
                session.setCriteria(sort: .bySender, filter: session.filter)
            }
            session.requestVisibleRows()
        }
        try waitFor { await writer.stop() }
        for line in session.applyEvents() { print(line) }
        try waitFor { await session.cache.waitForLoads() }
        var inconsistencies = session.view.violations.count + session.view.staleCells().count
        if !(try session.matchesFreshQuery()) {
            inconsistencies += 1
            print("inconsistency: the displayed list differs from a fresh query")
        }
        let (p50, p99) = session.statusCounts
        let (mainP50, mainP99) = session.mainCounts
        print("demo: \(session.batches) batches, \(session.changes) changes, \(inconsistencies) inconsistencies, p50 \(String(format: "%.3f", p50)) ms, p99 \(String(format: "%.3f", p99)) ms, main p50 \(String(format: "%.3f", mainP50)) ms, main p99 \(String(format: "%.3f", mainP99)) ms")
        return inconsistencies == 0 ? 0 : 1
    }

    @MainActor
    static func runInteractive(database: DatabaseQueue, writesPerSecond: Int, seed: UInt64) throws -> Int32 {
        let terminal = Terminal()
        var size = terminal.size
        let session = try DemoSession(database: database, viewportRows: max(1, size.rows - 3))
        let writer = DemoWriter()
        writer.start(database: database, writesPerSecond: writesPerSecond, seed: seed)
        signal(SIGTERM) { _ in terminationRequested = 1 }
        signal(SIGHUP) { _ in terminationRequested = 1 }
        terminal.enter()
        defer { terminal.leave() }
        var screen = DemoScreen()
        loop: while terminationRequested == 0 {
            let current = terminal.size
            if current != size {
                size = current
                session.view.viewportRows = max(1, size.rows - 3)
                session.view.setContentOffset(session.view.contentOffset)
                terminal.write("\u{1B}[2J")
            }
            for key in terminal.readKeys(timeout: 50) {
                if screen.editingFilter != nil {
                    switch key {
                    case .enter:
                        session.setCriteria(sort: session.sort, filter: screen.editingFilter ?? "")
                        screen.editingFilter = nil
                    case .escape: screen.editingFilter = nil
                    case .backspace:
                        if var text = screen.editingFilter, !text.isEmpty {
                            text.removeLast()
                            screen.editingFilter = text
                        }
                    case let .character(character): screen.editingFilter?.append(character)
                    case .interrupt: break loop
                    default: break
                    }
                    continue
                }
                switch key {
                case .character("q"), .interrupt: break loop
                case .up: moveCursor(session, by: -1)
                case .down: moveCursor(session, by: 1)
                case .pageUp: moveCursor(session, by: -session.view.viewportRows)
                case .pageDown: moveCursor(session, by: session.view.viewportRows)
                case .home: moveCursor(session, by: -Int.max / 2)
                case .end: moveCursor(session, by: Int.max / 2)
                case .character(" "):
                    if let id = session.cursor {
                        if session.presenter.selectedItemIDs.contains(id) { session.presenter.deselectItem(id: id) } else { session.presenter.selectItem(id: id) }
                    }
                case .character("/"): screen.editingFilter = session.filter
                case .character("s"):
                    let next = DemoSort(rawValue: (session.sort.rawValue + 1) % DemoSort.allCases.count) ?? .byActivity
                    session.setCriteria(sort: next, filter: session.filter)
                case .character("p"):
                    writer.isPaused.toggle()
                    screen.writerPaused = writer.isPaused
                default: break
                }
            }
            _ = session.applyEvents()
            session.requestVisibleRows()
            terminal.write(screen.render(session, size: size))
        }
        writer.isPaused = true
        return 0
    }

    /// Moves the keyboard cursor by `delta` rows (by identity) and scrolls to keep it in view:
    /// positions through the live result, O(log n), never a walk over every row.
    @MainActor
    static func moveCursor(_ session: DemoSession, by delta: Int) {
        let count = session.result.count
        guard count > 0 else { return }
        let current = session.cursor.flatMap { session.presenter.displayed.path(ofItem: .item($0)) }.flatMap(session.flatPosition) ?? 0
        let target = min(max(0, current.addingReportingOverflow(delta).partialValue), count - 1)
        guard let path = session.displayedPath(ofPosition: target), let row = session.view.row(of: path) else { return }
        session.cursor = session.result.row(at: target)?.id
        let view = session.view
        if row < view.contentOffset + 1 { view.setContentOffset(max(0, row - 1)) }
        if row >= view.contentOffset + view.viewportRows { view.setContentOffset(row - view.viewportRows + 1) }
    }
}
