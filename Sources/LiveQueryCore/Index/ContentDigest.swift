/// A 64-bit digest of SQL values, by storage class and exact bytes: the content token of rows.
/// Two different contents share a token with probability about 2⁻⁶⁴.
package struct ContentDigest {
    private var state: UInt64 = 0x243F_6A88_85A3_08D3

    package init() {}

    @inline(__always)
    private static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    @inline(__always)
    package mutating func combine(word: UInt64) {
        state = Self.mix(state ^ word, 0x9E37_79B9_7F4A_7C15 ^ (state >> 17))
    }

    package mutating func combine(bytes: UnsafeRawBufferPointer) {
        combine(word: UInt64(bytes.count))
        var offset = 0
        while offset + 8 <= bytes.count {
            combine(word: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail = tail << 8 | UInt64(bytes[index]) }
            combine(word: tail ^ 0xA076_1D64_78BD_642F)
        }
    }

    package mutating func combine(_ value: SQLValue) {
        switch value {
        case .null: combine(word: 1)
        case let .integer(integer):
            combine(word: 2)
            combine(word: UInt64(bitPattern: integer))
        case let .real(real):
            combine(word: 3)
            combine(word: real.bitPattern)
        case let .text(text):
            combine(word: 4)
            text.withBytes { combine(bytes: UnsafeRawBufferPointer($0)) }
        case let .blob(bytes):
            combine(word: 5)
            bytes.withUnsafeBytes { combine(bytes: $0) }
        }
    }

    package mutating func combine(_ key: SortKey) {
        switch key {
        case let .single(value): combine(value)
        case let .multiple(values): for value in values { combine(value) }
        }
    }

    package var value: UInt64 { Self.mix(state, 0xE703_7ED1_A0B4_28DB) }
}
