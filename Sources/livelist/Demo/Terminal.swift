#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The terminal in raw mode on the alternate screen, restored on every way out.
final class Terminal {
    enum Key: Equatable {
        case up, down, pageUp, pageDown, home, end, enter, escape, backspace, character(Character), interrupt
    }

    private var original = termios()
    private var isRaw = false

    var size: (rows: Int, columns: Int) {
        var window = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &window) == 0, window.ws_row > 0 else { return (24, 80) }
        return (Int(window.ws_row), Int(window.ws_col))
    }

    func enter() {
        tcgetattr(STDIN_FILENO, &original)
        var raw = original
        // No echo, no line buffering, no signals from keys (Ctrl-C arrives as a key and quits
        // cleanly), no output post-processing surprises on input.
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        isRaw = true
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
    }

    func leave() {
        guard isRaw else { return }
        write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
        isRaw = false
    }

    deinit { leave() }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = writeToStandardOutput(bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// The keys typed within `timeout` milliseconds (empty when none).
    func readKeys(timeout: Int32) -> [Key] {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeout) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(STDIN_FILENO, &buffer, buffer.count)
        guard count > 0 else { return [] }
        return Self.parse(Array(buffer[0..<count]))
    }

    static func parse(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B {
                let rest = Array(bytes[(index + 1)...])
                let sequences: [([UInt8], Key)] = [
                    (Array("[A".utf8), .up), (Array("[B".utf8), .down), (Array("[5~".utf8), .pageUp), (Array("[6~".utf8), .pageDown),
                    (Array("[H".utf8), .home), (Array("[F".utf8), .end), (Array("[1~".utf8), .home), (Array("[4~".utf8), .end),
                    (Array("OH".utf8), .home), (Array("OF".utf8), .end),
                ]
                if let (sequence, key) = sequences.first(where: { rest.starts(with: $0.0) }) {
                    keys.append(key)
                    index += 1 + sequence.count
                } else {
                    keys.append(.escape)
                    index += 1
                }
                continue
            }
            switch byte {
            case 0x03: keys.append(.interrupt)
            case 0x0D, 0x0A: keys.append(.enter)
            case 0x7F, 0x08: keys.append(.backspace)
            default:
                if byte >= 0x20 && byte < 0x7F { keys.append(.character(Character(Unicode.Scalar(byte)))) }
            }
            index += 1
        }
        return keys
    }
}

/// The C `write(2)` to standard output; a free function because `Terminal.write` shadows the name
/// inside the class (and `Glibc.write` would not build on Darwin).
private func writeToStandardOutput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int {
    write(STDOUT_FILENO, bytes, count)
}
