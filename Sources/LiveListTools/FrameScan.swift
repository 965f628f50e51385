import Foundation

/// What the load generators read of a server frame without parsing it: a pattern's place, and the
/// string value after it. One implementation for `wire.fanout` and `pg.mixed`.
enum FrameScan {
    /// Where `pattern` first occurs in `bytes`, from `from`.
    static func find(_ pattern: [UInt8], in bytes: [UInt8], from: Int = 0) -> Int? {
        guard bytes.count >= pattern.count, let head = pattern.first else { return nil }
        var start = from
        while start <= bytes.count - pattern.count {
            guard let next = bytes[start...(bytes.count - pattern.count)].firstIndex(of: head) else { return nil }
            if bytes[next..<next + pattern.count].elementsEqual(pattern) { return next }
            start = next + 1
        }
        return nil
    }

    /// Where the string value after `pattern` (its first occurrence) lies. `from` and `to` come
    /// before any row in the server's messages, so a row's text cannot be mistaken for them
    /// (quotes inside values are escaped anyway).
    static func field(_ pattern: [UInt8], in bytes: [UInt8]) -> Range<Int>? {
        guard let start = find(pattern, in: bytes) else { return nil }
        let valueStart = start + pattern.count
        guard valueStart <= bytes.count, let end = bytes[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return valueStart..<end
    }
}

/// A load generator: `livelist bench --child …` in a process of its own, which says "ready" once
/// it has subscribed and reports when its input closes.
enum LoadGeneratorProcess {
    static func start(_ arguments: [String], name: String) throws -> (Process, Pipe, LineReader) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["bench"] + arguments
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let lines = LineReader(output.fileHandleForReading)
        guard lines.next() == "ready" else { throw BenchFailure("\(name): the load generator did not subscribe") }
        return (process, input, lines)
    }
}
