/// RFC 4648 base64 with padding, strict on input: no whitespace, no URL alphabet, no missing pad.
///
/// Why not Foundation's: a blob has one spelling on the wire, so that a value decodes and encodes
/// back to the same text (what a client keeps and compares is what the server sent). Foundation's
/// `Data(base64Encoded:)` takes non-canonical input — `"QR=="` decodes to the same byte as
/// `"QQ=="`, the bits its pad hides ignored — which this decoder refuses.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 2 < bytes.count {
            let word = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { output.append(alphabet[Int(word >> UInt32(shift) & 0x3F)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let word = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            output.append(alphabet[Int(word >> 18 & 0x3F)])
            output.append(alphabet[Int(word >> 12 & 0x3F)])
            output.append(rest == 2 ? alphabet[Int(word >> 6 & 0x3F)] : UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            var word: UInt32 = 0
            var padding = 0
            for offset in 0..<4 {
                let byte = input[index + offset]
                if byte == UInt8(ascii: "="), isLast, offset >= 2 {
                    padding += 1
                    word <<= 6
                    continue
                }
                let value = values[Int(byte)]
                guard value != 0xFF, padding == 0 else { return nil }
                word = word << 6 | UInt32(value)
            }
            output.append(UInt8(word >> 16 & 0xFF))
            if padding < 2 { output.append(UInt8(word >> 8 & 0xFF)) }
            if padding < 1 { output.append(UInt8(word & 0xFF)) }
            index += 4
        }
        // Canonical form only: the bits a pad hides must be zero.
        guard encode(output) == text else { return nil }
        return output
    }
}
