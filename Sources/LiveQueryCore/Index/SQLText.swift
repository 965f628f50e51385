/// Text as SQLite stores it: its bytes. Two texts are equal exactly when their bytes are, as in
/// SQLite's BINARY collation — never by Swift `String` equality, which treats canonically
/// equivalent text ("é" and "e" + U+0301) as equal. Embedded NUL bytes and bytes that are not
/// valid UTF-8 (written by another program) are kept.
///
/// ```swift
/// import LiveQuery
///
/// func compareAccents() {
///     let composed: SQLText = "é"                       // C3 A9
///     let decomposed = SQLText("e\u{301}")              // 65 CC 81
///     assert(composed != decomposed)                    // different, as in SQLite
///     assert(composed.string == decomposed.string)      // equal, as Swift strings
/// }
/// ```
public struct SQLText: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    @usableFromInline
    enum Storage: Sendable {
        /// Valid UTF-8 (the common case; short text is stored inline by `String`).
        case utf8(String)
        /// Bytes that are not valid UTF-8.
        case bytes([UInt8])
    }

    @usableFromInline
    let storage: Storage

    /// The text of `string`, as its UTF-8 bytes.
    public init(_ string: String) {
        storage = .utf8(string)
    }

    public init(stringLiteral value: String) {
        storage = .utf8(value)
    }

    /// The text made of `bytes`, valid UTF-8 or not. Inlinable, so that an engine's reads
    /// specialize it for their own collection of bytes: unspecialized, it walks them through
    /// generic witnesses, a call per byte.
    @inlinable
    public init(bytes: some Collection<UInt8>) {
        if let string = Self.decodeExactly(bytes) { storage = .utf8(string) } else { storage = .bytes(Array(bytes)) }
    }

    /// The text's bytes.
    public var bytes: [UInt8] {
        switch storage {
        case let .utf8(string): Array(string.utf8)
        case let .bytes(bytes): bytes
        }
    }

    /// The text as a Swift string; bytes that are not valid UTF-8 become U+FFFD.
    public var string: String {
        switch storage {
        case let .utf8(string): string
        case let .bytes(bytes): String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Whether the bytes are valid UTF-8.
    public var isValidUTF8: Bool {
        if case .utf8 = storage { return true }
        return false
    }

    /// Calls `body` with the text's bytes, without copying them when possible.
    @inline(__always)
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case let .utf8(string):
            if let result = try string.utf8.withContiguousStorageIfAvailable(body) { return result }
            return try Array(string.utf8).withUnsafeBufferPointer(body)
        case let .bytes(bytes):
            return try bytes.withUnsafeBufferPointer(body)
        }
    }

    public static func == (lhs: SQLText, rhs: SQLText) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case let (.utf8(a), .utf8(b)): a.utf8.elementsEqual(b.utf8)
        case let (.bytes(a), .bytes(b)): a == b
        default: false   // valid and invalid UTF-8 never share bytes
        }
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { string }

    /// `bytes` as a `String` when they are valid UTF-8, else `nil`. `String(decoding:)` repairs
    /// invalid input instead of refusing it, so the bytes are checked first.
    @inlinable
    static func decodeExactly(_ bytes: some Collection<UInt8>) -> String? {
        if !bytes.allSatisfy({ $0 < 0x80 }) {
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: break loop
                case .error: return nil
                }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
