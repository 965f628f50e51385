/// The version of a live query's result that a message leads from or to: the result after a
/// given number of commits of one live query on one server, as the text `epoch:sequence`.
///
/// The epoch names the live query's life on the server (a new one after a server restart or
/// after the live query was closed and opened again); the sequence counts the changesets it
/// produced. A client compares versions for equality only and sends back the last one it applied
/// to resume. SQLite servers use a random epoch; a PostgreSQL server may use commit positions.
public struct WireVersion: Hashable, Sendable, CustomStringConvertible {
    /// The live query's life on its server.
    public var epoch: String
    /// The number of changesets since the epoch began.
    public var sequence: UInt64

    /// Creates a version.
    public init(epoch: String, sequence: UInt64) {
        self.epoch = epoch
        self.sequence = sequence
    }

    /// Reads `epoch:sequence`; the epoch is 1–64 letters, digits, `-` or `_`.
    public init?(_ text: String) {
        guard let colon = text.utf8.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let epoch = String(text[..<colon])
        let digits = text[text.index(after: colon)...]
        guard (1...64).contains(epoch.utf8.count),
              epoch.utf8.allSatisfy({ byte in
                  (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
              }),
              let sequence = UInt64(digits), String(sequence) == digits else { return nil }
        self.init(epoch: epoch, sequence: sequence)
    }

    /// `epoch:sequence`.
    public var description: String { "\(epoch):\(sequence)" }

    /// The version after one more changeset.
    public var next: WireVersion { WireVersion(epoch: epoch, sequence: sequence + 1) }
}
