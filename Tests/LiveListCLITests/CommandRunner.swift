import Foundation

/// Runs the `livelist` binary that `swift test` built next to the test bundle.
struct CommandRunner {
    struct Result {
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

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
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

    /// Writes `text` to a fresh temporary file and returns its path.
    static func temporaryFile(_ text: String, name: String = "snapshot.json") throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }
}
