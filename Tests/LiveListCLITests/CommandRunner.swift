import Foundation
import OwnThread

/// Runs the `livelist` binary that `swift test` built next to the test bundle.
struct CommandRunner {
    struct Result: Sendable {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    static var executable: URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("livelist").path),
              directory.pathComponents.count > 1 {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("livelist")
    }

    /// Runs the command to its end on a thread of its own: a wait on the test's thread would hold
    /// one of the cooperative pool's few threads (see `onOwnThread`) for the command's whole run.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Result {
        try await onOwnThread { try runBlocking(arguments, environment: environment) }
    }

    private static func runBlocking(_ arguments: [String], environment: [String: String]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }

    /// What `handle` gives up to its first line break, within `seconds` (the line a starting
    /// server prints), read on a thread of its own.
    static func firstLine(of handle: FileHandle, within seconds: TimeInterval) async -> String {
        await onOwnThread {
            var text = ""
            let deadline = Date().addingTimeInterval(seconds)
            while !text.contains("\n"), Date() < deadline {
                let data = handle.availableData
                if data.isEmpty { break }   // the end: the process closed it
                text += String(decoding: data, as: UTF8.self)
            }
            return text
        }
    }

    /// SIGTERM, then the exit waited for on a thread of its own (a graceful shutdown takes its
    /// drain time); the exit status.
    static func terminate(_ process: Process) async -> Int32 {
        await onOwnThread {
            process.terminate()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// Writes `text` to a fresh temporary file and returns its path.
    static func temporaryFile(_ text: String, name: String = "snapshot.json") throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }
}
