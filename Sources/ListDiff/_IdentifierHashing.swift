/// How the diff hashes identifiers: `BitwiseIdentifier`s by their bytes, everything else with the
/// standard `Hasher`.
@usableFromInline
enum _IdentifierHashing {
    /// A per-process random key, so that hash values cannot be predicted from outside.
    @usableFromInline
    static let seed: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next() | 1, generator.next() | 1)
    }()

    @inlinable
    static func usesBytes<ID: Hashable>(_ type: ID.Type) -> Bool {
        type is any BitwiseIdentifier.Type
    }

    /// Folds a 128-bit product: the mixing step of the wyhash family.
    @inlinable @inline(__always)
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of `value`'s bytes under `seed`; only valid for `BitwiseIdentifier` types.
    @inlinable @inline(__always)
    static func bytesHash<ID>(_ value: ID, seed: (UInt64, UInt64)) -> Int {
        withUnsafeBytes(of: value) { bytes -> Int in
            var state = seed.0 ^ UInt64(truncatingIfNeeded: bytes.count)
            var offset = 0
            while offset + 16 <= bytes.count {
                let low = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                let high = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
                state = mix(low ^ seed.1, high ^ state)
                offset += 16
            }
            if offset + 8 <= bytes.count {
                state = mix(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) ^ seed.1, state ^ 0x9E37_79B9_7F4A_7C15)
                offset += 8
            }
            if offset < bytes.count {
                var tail: UInt64 = 0
                for index in offset..<bytes.count { tail = tail << 8 | UInt64(bytes[index]) }
                state = mix(tail ^ seed.1, state ^ 0xA076_1D64_78BD_642F)
            }
            return Int(truncatingIfNeeded: mix(state ^ seed.0, 0xE703_7ED1_A0B4_28DB))
        }
    }
}
