#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs one fuzz target: under libFuzzer when built for fuzzing (`-DLIVELIST_FUZZ` with
/// `-sanitize=fuzzer`, as `Scripts/fuzz.sh` builds it), else over the files and folders named on
/// the command line, each file once: the committed corpus and every crash's input replayed by an
/// ordinary build, cheaply. `body` gets each input's bytes; a crash, a failed precondition or an
/// ASan report is a finding, anything `body` throws away is not.
public enum FuzzTarget {
    /// Runs `body` over the inputs and exits: libFuzzer's exit status when fuzzing, else 0 after
    /// every input ran (a crash ends the process, after printing the input's path).
    public static func main(_ body: @escaping @Sendable ([UInt8]) -> Void) -> Never {
        target = body
        #if LIVELIST_FUZZ
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, runOne))
        #else
        exit(replay(Array(CommandLine.arguments.dropFirst())))
        #endif
    }

    nonisolated(unsafe) private static var target: @Sendable ([UInt8]) -> Void = { _ in }

    /// The input being replayed, as a C string for the crash handler (which may not allocate).
    nonisolated(unsafe) private static var current: UnsafeMutablePointer<CChar>?

    private static let runOne: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, count in
        target(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
        return 0
    }

    /// Runs every file of `paths` (a folder: its files, in name order); returns the exit status.
    static func replay(_ paths: [String]) -> Int32 {
        guard !paths.isEmpty else {
            printError("usage: \(CommandLine.arguments.first ?? "fuzz-target") FILE-OR-FOLDER…  (replays each input once)")
            return 2
        }
        for number in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            signal(number) { number in
                if let current = FuzzTarget.current {
                    let prefix = "fuzz replay: crashed on "
                    _ = write(2, prefix, strlen(prefix))
                    _ = write(2, current, strlen(current))
                    _ = write(2, "\n", 1)
                }
                signal(number, SIG_DFL)
                raise(number)
            }
        }
        var inputs = 0
        for path in paths.flatMap(files(at:)) {
            guard let bytes = read(path) else {
                printError("fuzz replay: cannot read \(path)")
                return 2
            }
            free(current)
            current = strdup(path)
            target(bytes)
            inputs += 1
        }
        print("fuzz replay: \(inputs) inputs, no crash")
        return 0
    }

    private static func printError(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    /// `path` itself when it is a file, else the files in it (not below), in name order.
    private static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    private static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            bytes.append(contentsOf: buffer[0..<count])
            if count < buffer.count { return ferror(file) == 0 ? bytes : nil }
        }
    }
}

#if LIVELIST_FUZZ
/// libFuzzer's entry point for a program with a `main` of its own.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// What libFuzzer's own objects name; runs the target as `LLVMFuzzerRunDriver`'s callback does.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzTarget.runOneInput(data, count)
}

extension FuzzTarget {
    static func runOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt { runOne(data, count) }
}
#endif
