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
            Keys: ↑↓ PgUp PgDn Home End scroll, Space selects, e archives the conversation at the cursor, u marks it read or
            unread, c writes a new one (Enter sends), / edits the filter, s cycles the sort, p pauses the writer, q quits. Over
            --remote these are the server's published mutations, each applied once: made while the server is away, they wait and
            land when it is back.
            With --headless (automatic when stdout is not a terminal) a scripted viewport runs for --duration seconds, one line is
            printed per applied batch, and the last line is: demo: B batches, C changes, I inconsistencies, p50 X ms, p99 Y ms.
            With --remote ws://HOST:PORT/live the list comes from a `livelist serve --demo` server instead (its writer changes
            the data; p50/p99 are then from the server seeing a commit to the changes applied here), and the headless run
            ends by comparing the list with a fresh subscription at the same version.
            """
    )

    @Option(help: "A database file to use (created with the demo schema when missing).") var db: String?
    @Option(help: "Conversations to generate in a new database.") var rows = 100_000
    @Option(help: "Seed of the generated data and of the writer.") var seed: UInt64 = 1
    @Option(help: "Changes the writer makes per second.") var writesPerSecond = 40
    @Option(help: "Seconds to run in headless mode.") var duration: Double = 10
    @Flag(help: "Run the scripted, non-interactive demo.") var headless = false
    @Option(help: "Show the list of a `livelist serve --demo` server (ws://HOST:PORT/live) instead of a local database.") var remote: String?
    @Option(help: "A bearer token for --remote.") var token: String?

    func validate() throws {
        guard rows >= 0 else { throw ValidationError("--rows must not be negative") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        guard writesPerSecond > 0 else { throw ValidationError("--writes-per-second must be positive") }
        if let remote {
            guard remote.hasPrefix("ws://") || remote.hasPrefix("wss://") else { throw ValidationError("--remote must be a ws:// or wss:// URL") }
            guard db == nil else { throw ValidationError("--remote shows a server's list: leave out --db") }
        }
        guard token == nil || remote != nil else { throw ValidationError("--token goes with --remote") }
    }

    func run() throws {
        let interactive = !headless && isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1
        let duration = duration, seed = seed
        if let remote {
            let token = token
            let code = try MainActor.assumeIsolated {
                let session = RemoteDemoSession(url: remote, token: token, viewportRows: interactive ? max(1, Terminal().size.rows - 3) : 30)
                if !interactive { try session.waitForFirstState(seconds: 15) }
                return interactive
                    ? Self.runInteractive(session, writer: nil, title: "inbox at \(remote)")
                    : Self.runHeadless(session, writer: nil, seed: seed, duration: duration)
            }
            if code != 0 { throw ExitCode(code) }
            return
        }
        let path: String
        if let db {
            path = db
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-demo-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("inbox.sqlite").path
        }
        let database = try InboxDatabase.open(path: path, rows: rows, seed: seed)
        let writesPerSecond = writesPerSecond
        let code = try MainActor.assumeIsolated {
            let session = try DemoSession(database: database, viewportRows: interactive ? max(1, Terminal().size.rows - 3) : 30)
            let writer = DemoWriter()
            writer.start(database: database, writesPerSecond: writesPerSecond, seed: seed)
            return interactive
                ? Self.runInteractive(session, writer: writer, title: "inbox")
                : Self.runHeadless(session, writer: writer, seed: seed, duration: duration)
        }
        if code != 0 { throw ExitCode(code) }
    }

    /// Lets the main actor run (a remote query's connection, a row cache's callbacks) for `seconds`.
    @MainActor
    static func pump(_ seconds: Double) {
        let end = Date(timeIntervalSinceNow: seconds)
        while Date() < end { _ = RunLoop.main.run(mode: .default, before: min(end, Date(timeIntervalSinceNow: 0.01))) }
    }

    @MainActor
    static func runHeadless(_ session: some DemoListSession, writer: DemoWriter?, seed: UInt64, duration: Double) -> Int32 {
        var random = SeededRandomNumberGenerator(seed: seed &+ 2)
        let ticks = max(3, Int(duration * 10))
        for tick in 1...ticks {
            pump(0.1)
            for line in session.applyEvents() { print(line) }
            // The scripted viewport: scroll, select, change the filter and the sort.
            if tick % 5 == 0 { session.setContentOffset(Int.random(in: 0...max(0, min(2_000, session.maximumContentOffset)), using: &random)) }
            if tick % 7 == 0 { session.selectVisibleRow(using: &random) }
            if tick == ticks / 3 {
                print("script: filter \"a\"")
                session.setCriteria(sort: session.sort, filter: "a")
            }
            if tick == 2 * ticks / 3 {
                print("script: sort \(DemoSort.bySender.title)")
                session.setCriteria(sort: .bySender, filter: session.filter)
            }
            // Acting on rows: read/unread and archive at the cursor, then a new conversation.
            if tick == ticks / 4 {
                print("script: u, a row in view read/unread")
                session.moveCursorToLoadedRow(using: &random)
                session.toggleUnreadAtCursor()
            }
            if tick == ticks / 2 {
                print("script: e, archive a row in view")
                session.moveCursorToLoadedRow(using: &random)
                session.archiveAtCursor()
            }
            if tick == 3 * ticks / 4 {
                print("script: c, send a conversation")
                session.send(subject: "from the terminal demo: e\u{301} \u{E9} 😀")
            }
            session.requestVisibleRows()
        }
        if let writer {
            do {
                try waitFor { await writer.stop() }
            } catch {
                print("inconsistency: the writer did not stop: \(error)")
                return 1
            }
        }
        pump(0.2)
        for line in session.applyEvents() { print(line) }
        let problems: [String]
        do {
            problems = try session.finalCheck()
        } catch {
            problems = ["the final check failed: \(error)"]
        }
        // What arrived while the check waited (the answers to the last mutations among it).
        for line in session.applyEvents() { print(line) }
        for problem in problems { print("inconsistency: \(problem)") }
        let (p50, p99) = session.statusCounts
        let (mainP50, mainP99) = session.mainCounts
        print("demo: \(session.batches) batches, \(session.changes) changes, \(problems.count) inconsistencies, p50 \(String(format: "%.3f", p50)) ms, p99 \(String(format: "%.3f", p99)) ms, main p50 \(String(format: "%.3f", mainP50)) ms, main p99 \(String(format: "%.3f", mainP99)) ms")
        return problems.isEmpty ? 0 : 1
    }

    @MainActor
    static func runInteractive(_ session: some DemoListSession, writer: DemoWriter?, title: String) -> Int32 {
        let terminal = Terminal()
        var size = terminal.size
        signal(SIGTERM) { _ in terminationRequested = 1 }
        signal(SIGHUP) { _ in terminationRequested = 1 }
        terminal.enter()
        defer { terminal.leave() }
        var screen = DemoScreen()
        loop: while terminationRequested == 0 {
            let current = terminal.size
            if current != size {
                size = current
                session.viewportRows = max(1, size.rows - 3)
                session.setContentOffset(session.contentOffset)
                terminal.write("\u{1B}[2J")
            }
            for key in terminal.readKeys(timeout: 40) {
                if let subject = screen.composing {
                    switch key {
                    case .enter:
                        if !subject.isEmpty { session.send(subject: subject) }
                        screen.composing = nil
                    case .escape: screen.composing = nil
                    case .backspace: if !subject.isEmpty { screen.composing?.removeLast() }
                    case let .character(character): screen.composing?.append(character)
                    case .interrupt: break loop
                    default: break
                    }
                    continue
                }
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
                case .up: session.moveCursor(by: -1)
                case .down: session.moveCursor(by: 1)
                case .pageUp: session.moveCursor(by: -session.viewportRows)
                case .pageDown: session.moveCursor(by: session.viewportRows)
                case .home: session.moveCursor(by: -Int.max / 2)
                case .end: session.moveCursor(by: Int.max / 2)
                case .character(" "): session.toggleSelectionAtCursor()
                case .character("e"): session.archiveAtCursor()
                case .character("u"): session.toggleUnreadAtCursor()
                case .character("c"): screen.composing = ""
                case .character("/"): screen.editingFilter = session.filter
                case .character("s"):
                    let next = DemoSort(rawValue: (session.sort.rawValue + 1) % DemoSort.allCases.count) ?? .byActivity
                    session.setCriteria(sort: next, filter: session.filter)
                case .character("p"):
                    // The writer of a remote list runs on its server.
                    if let writer {
                        writer.isPaused.toggle()
                        screen.writerPaused = writer.isPaused
                    }
                default: break
                }
            }
            pump(0.01)
            _ = session.applyEvents()
            session.requestVisibleRows()
            terminal.write(screen.render(session, size: size, title: title))
        }
        writer?.isPaused = true
        return 0
    }
}
