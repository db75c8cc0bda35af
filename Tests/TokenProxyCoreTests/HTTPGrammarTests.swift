import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyHTTP

/// The byte classes of HTTP's grammar, checked byte by byte against their definitions.
struct HTTPGrammarTests {
    /// RFC 9110 §5.6.2: a token character is a letter, a digit or one of ``!#$%&'*+-.^_`|~``.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Every byte value, alone and inside a longer token, in each form the checks take.
    @Test func everyByteIsATokenCharacterExactlyWhenTheGrammarSaysSo() {
        for value in 0...255 {
            let byte = UInt8(value)
            let expected = Self.isTokenCharacter(byte)
            let alone = [byte]
            let inside = Array("X-".utf8) + [byte] + Array("-y".utf8)
            for bytes in [alone, inside] {
                #expect(HTTPGrammar.isToken(bytes) == expected, "byte \(value)")
                bytes.withUnsafeBufferPointer { #expect(HTTPGrammar.isToken($0) == expected, "byte \(value)") }
                bytes.withUnsafeBytes { #expect(HTTPGrammar.isToken($0) == expected, "byte \(value)") }
                // The configuration's check of header names (a layer below HTTP, with its own
                // copy of the rule) agrees, for the ASCII a String keeps as it is.
                if value < 128 {
                    let name = String(decoding: bytes, as: UTF8.self)
                    #expect(ConfigurationSyntax.isToken(name) == expected, "byte \(value)")
                }
            }
        }
        #expect(!HTTPGrammar.isToken([UInt8]()))
        #expect(!HTTPGrammar.isToken(""))
        #expect(HTTPGrammar.isToken("Content-Type"))
    }

    /// RFC 9110 §5.5: every byte but the controls (HTAB excepted) and DEL, at each place of
    /// the eight-byte words the check reads and in the tail after them.
    @Test func everyControlByteButHTABIsRefusedWhereverItLies() {
        for value in 0...255 {
            let byte = UInt8(value)
            let expected = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
            for position in 0..<19 {
                var bytes = Array(repeating: UInt8(ascii: "v"), count: 19)
                bytes[position] = byte
                #expect(HTTPGrammar.isValidFieldValue(bytes) == expected, "byte \(value) at \(position)")
                bytes.withUnsafeBytes {
                    #expect(HTTPGrammar.isValidFieldValue($0) == expected, "byte \(value) at \(position)")
                }
            }
        }
    }
}
