/// A window of a result: `count` rows from flat position `start` (0 is the first row of the
/// first section; positions run across sections). In JSON: `[start, count]`.
public struct WireWindow: Hashable, Sendable, CustomStringConvertible {
    /// The first position.
    public var start: Int
    /// The number of positions.
    public var count: Int

    /// Creates a window.
    public init(start: Int, count: Int) {
        self.start = start
        self.count = count
    }

    /// Creates the window of `range`.
    public init(_ range: Range<Int>) {
        self.init(start: range.lowerBound, count: range.count)
    }

    /// The positions, when the window is well formed (`start ≥ 0`, `count ≥ 0`, no overflow).
    public var range: Range<Int>? {
        guard start >= 0, count >= 0, start <= Int.max - count else { return nil }
        return start..<start + count
    }

    public var description: String { "[\(start), \(count)]" }

    var json: JSONValue { .array([.integer(Int64(start)), .integer(Int64(count))]) }

    init(json: JSONValue, field: String) throws(WireDecodingError) {
        guard case let .array(parts) = json, parts.count == 2,
              case let .integer(start) = parts[0], case let .integer(count) = parts[1],
              (Int64(Int32.min)...Int64(Int32.max)).contains(start), (Int64(Int32.min)...Int64(Int32.max)).contains(count)
        else { throw .invalidField(field, "expected [start, count] of 32-bit integers") }
        self.init(start: Int(start), count: Int(count))
    }
}
