import Testing

@testable import TokenProxyHTTP

/// The field-value check reads eight bytes at a time; every byte value, at every place of a
/// value longer than two words, must be judged as the byte-by-byte rule judges it (RFC 9110
/// §5.5: HTAB, SP and visible characters, obs-text from 0x80; no other control and no DEL).
struct FieldValueTests {
    @Test func everyByteAtEveryPlaceIsJudgedAsAlone() {
        for byte in UInt8.min...UInt8.max {
            let allowed = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
            for length in [1, 7, 8, 9, 17] {
                for place in 0..<length {
                    var value = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    value[place] = byte
                    let judged = value.withUnsafeBytes { HTTPGrammar.isValidFieldValue($0) }
                    #expect(judged == allowed, "byte \(byte) at \(place) of \(length)")
                }
            }
        }
    }

    @Test func wordsOfObsTextAndTabsAreValidAndAnyControlAmongThemIsNot() {
        let mixed: [UInt8] = [
            0x80, 0xFF, 0x09, 0x7E, 0x20, 0xC3, 0xA9, 0x09, 0x41, 0xFE, 0x81, 0x7E, 0x20, 0x09, 0x90, 0xA0,
        ]
        #expect(mixed.withUnsafeBytes { HTTPGrammar.isValidFieldValue($0) })
        for control: UInt8 in [0x00, 0x0A, 0x0D, 0x1F, 0x7F] {
            var broken = mixed
            broken[13] = control
            #expect(!broken.withUnsafeBytes { HTTPGrammar.isValidFieldValue($0) })
        }
        #expect([UInt8]().withUnsafeBytes { HTTPGrammar.isValidFieldValue($0) })
    }
}
