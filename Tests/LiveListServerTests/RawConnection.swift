import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to a test server driven byte by byte: a client that sends nothing, sends its
/// headers slowly, half-closes, stops reading, or writes frames no library would. Blocking
/// POSIX calls with timeouts, from a test's own thread.
final class RawConnection: @unchecked Sendable {
    // `@unchecked Sendable`: `descriptor` is set in `init` and closed once, by `close()`.
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Connects to `127.0.0.1:port`; `receiveBuffer` shrinks the socket's receive buffer (a
    /// client that stops reading then fills it soon).
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw Failure(description: "connect() failed: \(errno)")
        }
    }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send() failed: \(errno)") }
            sent += count
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// The WebSocket upgrade of `path`, answered: the status line.
    func upgrade(path: String = "/live", headers: String = "") throws -> String {
        try send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(headers)\r\n")
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard let byte = try receive(1).first else { throw Failure(description: "closed during the upgrade answer: \(String(decoding: head, as: UTF8.self))") }
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n").first ?? ""
    }

    /// One client frame, masked as RFC 6455 requires of clients.
    func sendFrame(opcode: UInt8, fin: Bool = true, _ payload: [UInt8]) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try send(frame)
    }

    /// Up to `count` bytes; empty when the server closed the connection.
    func receive(_ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, count, 0) }
        if read < 0 { throw Failure(description: "recv() failed or timed out: \(errno)") }
        return Array(buffer.prefix(read))
    }

    /// Reads server frames until a close frame: its code (`nil` when the socket closed without one).
    func closeCode() throws -> UInt16? {
        var pending: [UInt8] = []
        func take(_ count: Int) throws -> [UInt8]? {
            while pending.count < count {
                let bytes = try receive(65_536)
                if bytes.isEmpty { return nil }
                pending += bytes
            }
            defer { pending.removeFirst(count) }
            return Array(pending.prefix(count))
        }
        while true {
            guard let header = try take(2) else { return nil }
            var length = Int(header[1] & 0x7F)
            if length == 126 {
                guard let extended = try take(2) else { return nil }
                length = Int(extended[0]) << 8 | Int(extended[1])
            } else if length == 127 {
                guard let extended = try take(8) else { return nil }
                length = extended.reduce(0) { $0 << 8 | Int($1) }
            }
            guard let payload = try take(length) else { return nil }
            if header[0] & 0x0F == 0x8 {
                return payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1005
            }
        }
    }

    /// Whether the server closes the connection within `seconds` (reading and dropping what it sends).
    func isClosedByServer(within seconds: Double) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            do {
                if try receive(65_536).isEmpty { return true }
            } catch {
                if errno == EAGAIN || errno == EWOULDBLOCK { continue }
                return true   // reset
            }
        }
        return false
    }

    func shutdownWrites() { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    func close() { Glibc.close(descriptor) }
}
