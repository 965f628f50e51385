import Foundation
import OwnThread
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized)
struct DemoCommandTests {
    @Test("the headless demo runs the whole pipeline and ends with the contract's line, zero inconsistencies")
    func headlessRun() async throws {
        let result = try await CommandRunner.run(["demo", "--headless", "--duration", "3", "--rows", "3000", "--writes-per-second", "40"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n")
        let last = try #require(lines.last.map(String.init))
        // The contract's fields first; the main actor's time per update after them.
        #expect(last.wholeMatch(of: /demo: \d+ batches, \d+ changes, 0 inconsistencies, p50 [0-9.]+ ms, p99 [0-9.]+ ms, main p50 [0-9.]+ ms, main p99 [0-9.]+ ms/) != nil, "\(last)")
        #expect(lines.contains { $0.hasPrefix("batch ") })
        #expect(lines.contains { $0.hasPrefix("script: filter") })
        #expect(lines.contains { $0.hasPrefix("script: sort") })
        // Acting on rows: read/unread and archive at the cursor, and a new conversation.
        #expect(lines.contains { $0 == "send applied" })
        #expect(lines.contains { $0.hasPrefix("setUnread ") } && lines.contains { $0.hasPrefix("archive ") })
    }

    @Test("bad input: one clear line and exit status 2")
    func badInput() async throws {
        let missingDirectory = try await CommandRunner.run(["demo", "--headless", "--db", "/nonexistent/dir/inbox.sqlite"])
        #expect(missingDirectory.status == 2)
        #expect(missingDirectory.standardError.split(separator: "\n").count == 1)
        #expect(missingDirectory.standardError.contains("/nonexistent/dir/inbox.sqlite"))

        let otherSchema = try CommandRunner.temporaryFile("", name: "other.sqlite")
        try FileManager.default.removeItem(atPath: otherSchema)
        try await DatabaseQueue(path: otherSchema).write { db in try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY)") }
        let wrongSchema = try await CommandRunner.run(["demo", "--headless", "--db", otherSchema])
        #expect(wrongSchema.status == 2)
        #expect(wrongSchema.standardError.contains("not a livelist demo database"), "\(wrongSchema.standardError)")

        let notSQLite = try CommandRunner.temporaryFile("this is not a database", name: "text.sqlite")
        let garbage = try await CommandRunner.run(["demo", "--headless", "--db", notSQLite])
        #expect(garbage.status == 2)
        #expect(garbage.standardError.contains("file is not a database"), "\(garbage.standardError)")

        for options in [["--duration", "0"], ["--writes-per-second", "0"], ["--rows", "lots"], ["--bogus"]] {
            let invalid = try await CommandRunner.run(["demo", "--headless"] + options)
            #expect(invalid.status == 2, "\(options)")
            #expect(invalid.standardError.split(separator: "\n").count == 1, "\(options): \(invalid.standardError)")
        }
    }

    @Test("the interactive screen in tmux: rows and status, scrolling, a selection that survives a forced move, a filter, a clean quit")
    func interactiveScreen() async throws {
        guard let tmux = Tmux() else {
            Issue.record("tmux is not installed (.ci/run installs it)")
            return
        }
        let database = try CommandRunner.temporaryFile("", name: "inbox.sqlite")
        try FileManager.default.removeItem(atPath: database)
        let binary = CommandRunner.executable.path
        try await tmux.start("\(binary) demo --db \(database) --rows 3000 --writes-per-second 20; echo EXITED:$?; sleep 30")
        defer { tmux.kill() }
        let started = try await tmux.waitForScreen { $0.contains("rows · changeset p50") }
        #expect(started.contains("LiveList demo — inbox"))
        #expect(started.contains("q quit"))

        try await tmux.send("p")                       // pause the writer so positions are stable
        _ = try await tmux.waitForScreen { $0.contains("writer pause") }
        try await tmux.send("Home", "Down", "Down", "Down", "Down", "Down", "Space")
        let selected = try await tmux.waitForScreen { $0.contains("●") }
        let selectedLine = try #require(selected.split(separator: "\n").first { $0.contains("●") })

        // Another process moves the selected row to the top; the demo sees it through data_version.
        func batches(_ screen: String) -> Int? {
            guard let range = screen.range(of: #"(\d+) batches"#, options: .regularExpression) else { return nil }
            return Int(screen[range].prefix { $0.isNumber })
        }
        let batchesBefore = try #require(batches(try await tmux.screen()))
        // The demo's own connections write too (its engine's bookkeeping, a write the pause key
        // caught mid-flight): wait for the lock as any other process would.
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: database, configuration: configuration)
        // The selected row, found by what its line shows among the first rows (a write the pause
        // caught mid-flight may have moved rows since the selection was made).
        let found = try await queue.write { db -> (Int64, String, String)? in
            let rows = try Row.fetchAll(db, sql: "SELECT id, sender, subject FROM conversation WHERE archived = 0 ORDER BY day DESC, last_activity DESC, id LIMIT 12")
            guard let row = rows.first(where: { selectedLine.contains($0["sender"] as String) && selectedLine.contains($0["subject"] as String) }) else {
                return nil
            }
            let now = Int64(Date().timeIntervalSince1970) + 600
            try db.execute(sql: "UPDATE conversation SET last_activity = ?, day = ?, version = version + 1 WHERE id = ?", arguments: [now, now / 86_400, row["id"]])
            return (row["id"], row["sender"], row["subject"])
        }
        let (_, sender, _) = try #require(found, "the selected line \(selectedLine) shows one of the first rows")
        // Home once the move has landed: a row that lands above the first visible one keeps the
        // screen steady, so a Home pressed before it would leave the moved row above the viewport
        // (it does, when the move opens a new day's section, from 23:50 on).
        _ = try await tmux.waitForScreen { screen in batches(screen).map { $0 > batchesBefore } ?? false }
        try await tmux.send("Home")
        // The moved row is now the first row of the list, still selected.
        let moved = try await tmux.waitForScreen { screen in
            let rows = screen.split(separator: "\n").dropFirst().filter { !$0.contains("──") }
            return rows.first.map { $0.contains("●") && $0.contains(sender) } ?? false
        }
        #expect(moved.split(separator: "\n").filter { $0.contains("●") }.count == 1)

        try await tmux.send("/", "M", "a", "r", "g", "Enter")
        // The status line can show the filter while the keys are still being read: wait for the
        // screen whose rows are the filtered ones (a filter that never applies times out).
        func firstRows(_ screen: String) -> [Substring] {
            screen.split(separator: "\n").dropFirst(2).prefix(5).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        }
        let filtered = try await tmux.waitForScreen { screen in
            screen.contains("filter: Marg") && firstRows(screen).allSatisfy { $0.contains("Margaret") || $0.contains("──") || $0.contains("Marg") }
        }
        #expect(!firstRows(filtered).isEmpty, "\(filtered)")

        // c writes a conversation; Enter sends it, and the status line says it was applied.
        try await tmux.send("c", "H", "i", "Enter")
        _ = try await tmux.waitForScreen { $0.contains("send applied") }

        try await tmux.send("q")
        let after = try await tmux.waitForScreen { $0.contains("EXITED:0") }
        #expect(!after.contains("q quit"), "the alternate screen was not left")
    }
}

/// Drives a program in a detached tmux session on a private server.
struct Tmux {
    let socket = "livelist-test-\(UUID().uuidString.prefix(8))"
    let path: String

    init?() {
        let candidates = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        path = found
    }

    /// Runs a tmux command to its end on a thread of its own (see `onOwnThread`).
    @discardableResult
    func run(_ arguments: [String], capturesOutput: Bool = true) async throws -> String {
        try await onOwnThread { try runBlocking(arguments, capturesOutput: capturesOutput) }
    }

    private func runBlocking(_ arguments: [String], capturesOutput: Bool) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-L", socket] + arguments
        let output = Pipe()
        // The first command forks the tmux server, which would inherit (and hold open) a pipe.
        process.standardOutput = capturesOutput ? output : FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = capturesOutput ? output.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Spawned directly (posix_spawn + waitpid) with every standard stream on /dev/null: the tmux
    /// client forks a server, and Foundation's `Process` never reported the client's exit then.
    func start(_ command: String) async throws {
        try await onOwnThread { try startBlocking(command) }
    }

    private func startBlocking(_ command: String) throws {
        let arguments = [path, "-L", socket, "new-session", "-d", "-s", "demo", "-x", "110", "-y", "30", command]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in [Int32(0), 1, 2] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        // Nothing else of this process goes to the tmux server, which outlives the call: a
        // listening socket of another test's server, inherited, would hold its port after that
        // server closed (a restart on the same port then fails to bind).
        // (glibc 2.34 has it; Swift's Glibc module does not declare it.)
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, nil, &argv, environ)
        guard status == 0 else { throw CocoaError(.fileNoSuchFile) }
        var exitStatus: Int32 = 0
        waitpid(pid, &exitStatus, 0)
    }

    func send(_ keys: String...) async throws {
        for key in keys {
            try await run(["send-keys", "-t", "demo", key], capturesOutput: false)
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func screen() async throws -> String { try await run(["capture-pane", "-p", "-t", "demo"]) }

    /// Polls the screen until `condition` holds (15 s at most).
    func waitForScreen(_ condition: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(15)
        var last = ""
        while ContinuousClock.now < deadline {
            last = try await screen()
            if condition(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("screen never matched; last screen:\n\(last)")
        return last
    }

    /// Ends the session (from a `defer`: a short command, waited for where it is called).
    func kill() { _ = try? runBlocking(["kill-server"], capturesOutput: false) }
}
