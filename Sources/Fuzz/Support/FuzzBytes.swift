/// A fuzzer's bytes read as the values a target needs: numbers, flags, runs of bytes. Reading past
/// the end gives zeros and empty runs, so every input is a valid script and the fuzzer's
/// mutations all count.
public struct FuzzBytes {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte (0 past the end).
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A flag from the next byte.
    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A number in `range`, from as many bytes as it needs (big-endian, wrapped into the range).
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let span = UInt64(bitPattern: Int64(range.upperBound) &- Int64(range.lowerBound))
        var value: UInt64 = 0
        var covered: UInt64 = 0
        while covered < span {
            value = value << 8 | UInt64(byte())
            covered = covered == 0 ? 0xFF : covered << 8 | 0xFF
            if covered == .max { break }
        }
        let offset = span == .max ? value : value % (span + 1)
        return Int(Int64(range.lowerBound) &+ Int64(bitPattern: offset))
    }

    /// The next `count` bytes (fewer at the end).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// A run whose length is given by the next two bytes (big-endian).
    public mutating func chunk() -> [UInt8] { bytes(int(in: 0...0xFFFF)) }

    /// The bytes not read yet.
    public mutating func rest() -> [UInt8] { bytes(bytes.count - offset) }
}

extension Array<UInt8> {
    /// The lines of a text input (split at `\n`, which a JSON frame never holds raw): a corpus file
    /// holds one frame per line.
    public var lines: [ArraySlice<UInt8>] {
        split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    }
}
