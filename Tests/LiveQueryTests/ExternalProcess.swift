import Foundation
import OwnThread

/// The `sqlite3` shell as another process writing to the same database file.
enum ExternalProcess {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static var shell: URL? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { URL(fileURLWithPath: String($0)).appendingPathComponent("sqlite3") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs `sql` in `sqlite3` on `path` and waits for it to exit (at most 20 s) on a thread of
    /// its own: a blocking wait on one of the few threads of Swift's cooperative pool (two on a
    /// 2-core machine) would starve every other test's tasks — including the ones that release
    /// the lock the shell waits for.
    static func run(_ sql: String, on path: String) async throws {
        try await onOwnThread { try runBlocking(sql, on: path) }
    }

    private static func runBlocking(_ sql: String, on path: String) throws {
        let process = try start(on: path)
        let input = process.standardInput as? Pipe
        input?.fileHandleForWriting.write(Data((".timeout 5000\n" + sql + "\n").utf8))
        try input?.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(1_000) }
        guard !process.isRunning else {
            process.terminate()
            throw Failure(description: "sqlite3 did not finish: \(sql)")
        }
        guard process.terminationStatus == 0 else {
            let error = (process.standardError as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
            throw Failure(description: "sqlite3 failed (\(process.terminationStatus)): \(String(decoding: error, as: UTF8.self)) for \(sql)")
        }
    }

    /// Starts `sqlite3` on `path` with its standard input open: the caller writes SQL to it.
    static func start(on path: String) throws -> Process {
        guard let shell else { throw Failure(description: "the sqlite3 shell is not installed (CI installs it)") }
        let process = Process()
        process.executableURL = shell
        process.arguments = ["-batch", "-bail", path]
        process.standardInput = Pipe()
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        try process.run()
        return process
    }

    /// Starts a transaction in `sqlite3` with `sql` in it, waits until it holds the write lock,
    /// then kills the process with SIGKILL before it commits.
    static func killMidTransaction(_ sql: String, on path: String) async throws {
        try await onOwnThread { try killMidTransactionBlocking(sql, on: path) }
    }

    private static func killMidTransactionBlocking(_ sql: String, on path: String) throws {
        let process = try start(on: path)
        let input = process.standardInput as? Pipe
        let output = process.standardOutput as? Pipe
        input?.fileHandleForWriting.write(Data(".timeout 5000\nBEGIN IMMEDIATE;\n\(sql)\nSELECT 'written';\n".utf8))
        // Wait until the writes are done (the shell printed), then kill it mid-transaction.
        var printed = Data()
        let deadline = Date().addingTimeInterval(20)
        while !String(decoding: printed, as: UTF8.self).contains("written") && Date() < deadline {
            guard let chunk = output?.fileHandleForReading.availableData, !chunk.isEmpty else { break }
            printed += chunk
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
