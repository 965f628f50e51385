@testable import LiveListServer
import LiveListWire
import Testing

/// The decisions on a client's frames, without a socket: what each frame leads to.
@Suite("Message assembly")
struct MessageAssemblyTests {
    @Test("fragments join up to the limit; past it, binary, bad UTF-8 and stray continuations close with their codes")
    func outcomes() {
        var assembly = MessageAssembly(maximumBytes: 10)
        #expect(assembly.receive(.text, fin: true, data: Array("{}".utf8)) == .message(Array("{}".utf8)))
        #expect(assembly.receive(.text, fin: false, data: Array("0123".utf8)) == .pending)
        #expect(assembly.receive(.continuation, fin: false, data: Array("4567".utf8)) == .pending)
        #expect(assembly.receive(.continuation, fin: true, data: Array("89".utf8)) == .message(Array("0123456789".utf8)))
        // Exactly the limit passes; one byte more, in one frame or across fragments, does not.
        #expect(assembly.receive(.text, fin: true, data: [UInt8](repeating: 0x20, count: 11)) == .close(.messageTooBig, "a message larger than 10 bytes"))
        var fragmented = MessageAssembly(maximumBytes: 10)
        #expect(fragmented.receive(.text, fin: false, data: [UInt8](repeating: 0x20, count: 6)) == .pending)
        #expect(fragmented.receive(.continuation, fin: true, data: [UInt8](repeating: 0x20, count: 5)) == .close(.messageTooBig, "a message larger than 10 bytes"))
        var other = MessageAssembly(maximumBytes: 100)
        #expect(other.receive(.binary, fin: true, data: [1, 2]) == .close(.unsupportedData, "the protocol is JSON text frames"))
        #expect(other.receive(.text, fin: true, data: [0x22, 0xC3, 0x28, 0x22]) == .close(.invalidText, "a text message that is not UTF-8"))
        // A character split between two fragments is whole once joined.
        #expect(other.receive(.text, fin: false, data: [0x22, 0xC3]) == .pending)
        #expect(other.receive(.continuation, fin: true, data: [0xA9, 0x22]) == .message([0x22, 0xC3, 0xA9, 0x22]))
        #expect(other.receive(.continuation, fin: true, data: [0x20]) == .close(.protocolError, "a continuation frame without a message to continue"))
        var interleaved = MessageAssembly(maximumBytes: 100)
        #expect(interleaved.receive(.text, fin: false, data: [0x20]) == .pending)
        #expect(interleaved.receive(.text, fin: true, data: [0x20]) == .close(.protocolError, "a new message began before the last one ended"))
    }

    @Test("the end of a request head is found across reads, and only a blank line ends it")
    func endOfHead() {
        var tail: [UInt8] = []
        #expect(!RequestHeadDeadline.findsEndOfHead(tail: &tail, in: Array("GET / HTTP/1.1\r\nHost: x\r".utf8)))
        #expect(!RequestHeadDeadline.findsEndOfHead(tail: &tail, in: Array("\n".utf8)))
        #expect(!RequestHeadDeadline.findsEndOfHead(tail: &tail, in: Array("\r".utf8)))
        #expect(RequestHeadDeadline.findsEndOfHead(tail: &tail, in: Array("\nrest".utf8)))
        var other: [UInt8] = []
        #expect(!RequestHeadDeadline.findsEndOfHead(tail: &other, in: Array("a\r\nb\r\nc\n\n".utf8)))
    }
}
