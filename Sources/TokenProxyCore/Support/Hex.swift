import Foundation

/// Lowercase hexadecimal, for random ids and digests.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as two lowercase hex digits each.
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(self.digits[Int(byte >> 4)])
            text.append(self.digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
