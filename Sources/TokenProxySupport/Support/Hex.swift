import Foundation

/// Lowercase hexadecimal, for random ids and digests; either case read back, for percent
/// escapes.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as two lowercase hex digits each.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(self.digits[Int(byte >> 4)])
            text.append(self.digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The value of one hex digit (`0-9`, `a-f`, `A-F`), or nil for any other byte.
    package static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
