import Foundation

/// A `livelist serve` child process, its output in files.
final class ServeProcess {
    let process: Process
    private let output: URL
    private let errors: URL

    private init(process: Process, output: URL, errors: URL) {
        self.process = process
        self.output = output
        self.errors = errors
    }

    static func start(arguments: [String], log: URL) throws -> ServeProcess {
        let output = log.appendingPathExtension("out"), errors = log.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        return ServeProcess(process: process, output: output, errors: errors)
    }

    /// The WebSocket URL from the line the server prints once it listens.
    func waitForURL(timeout: Double) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("livelist serve: ws://") }),
               let url = line.split(separator: " ").dropFirst(2).first {
                return String(url)
            }
            guard process.isRunning else { throw BenchFailure("pg.mixed: livelist serve exited: \(logTail())") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BenchFailure("pg.mixed: livelist serve did not listen within \(Int(timeout)) s: \(logTail())")
    }

    func logTail() -> String { String(((try? String(contentsOf: errors, encoding: .utf8)) ?? "").suffix(2_000)) }

    /// SIGTERM (a graceful shutdown), then SIGKILL after 10 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
