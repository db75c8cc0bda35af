import Foundation
import Logging
import Testing

@testable import TokenProxySupport

/// Peer text reaches a text output with its control characters made visible
/// (`docs/reference/log-fields.md`).
struct TextEscapingTests {
    @Test(arguments: [
        ("plain text", "plain text"), ("", ""), ("line\nforged", #"line\nforged"#), ("a\r\nb", #"a\r\nb"#),
        ("tab\there", #"tab\there"#), ("\u{1b}[31mred", #"\u{1b}[31mred"#), ("nul\u{0}", #"nul\u{0}"#),
        ("del\u{7f}", #"del\u{7f}"#), ("csi\u{9b}31m", #"csi\u{9b}31m"#), ("c1\u{80}\u{9f}", #"c1\u{80}\u{9f}"#),
        ("caf\u{e9} \u{a0}\u{2603}", "caf\u{e9} \u{a0}\u{2603}"), (#"back\slash"#, #"back\slash"#),
    ])
    func controlCharactersAreEscaped(raw: String, escaped: String) {
        #expect(TextEscaping.escape(raw) == escaped)
    }

    /// No control character survives, whatever the scalar.
    @Test func noControlScalarSurvives() {
        let every = String(String.UnicodeScalarView((0...0x2FF).compactMap(Unicode.Scalar.init)))
        let escaped = TextEscaping.escape(every)
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    }

    /// The text log: a message and metadata with a line feed and an escape sequence stay one
    /// line with no raw control byte.
    @Test func aTextLogLineCannotBeForged() throws {
        let pipe = try LogPipe()
        let handler = LineLogHandler(label: "tokenproxy", format: .text, writer: LogWriter(descriptor: pipe.writeEnd))
        let logger = Logger(label: "tokenproxy") { _ in handler }
        logger.warning(
            "token endpoint: invalid_grant: gone\n2026-01-01T00:00:00+0000 info tokenproxy: forged",
            metadata: ["reason": "\u{1b}[31mred\u{1b}[0m\r\n", "key\nname": "\u{9b}2J"]
        )
        let text = pipe.read { $0.hasSuffix("\n") }
        #expect(text.utf8.count(where: { $0 == UInt8(ascii: "\n") }) == 1)
        #expect(text.hasSuffix("\n"))
        #expect(!text.dropLast().unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(text.contains(#"gone\n2026-01-01"#))
        #expect(text.contains(#"reason=\u{1b}[31mred\u{1b}[0m\r\n"#))
        #expect(text.contains(#"key\nname=\u{9b}2J"#))
    }

    /// A value with spaces, `=` or quotes is quoted, so a peer's text cannot pass for fields.
    @Test func aTextLogValueCannotForgeFields() throws {
        let pipe = try LogPipe()
        let handler = LineLogHandler(label: "tokenproxy", format: .text, writer: LogWriter(descriptor: pipe.writeEnd))
        let logger = Logger(label: "tokenproxy") { _ in handler }
        logger.info("request", metadata: ["reason": #"x route=admin status=200 "y" \"#, "status": "502", "empty": ""])
        let text = pipe.read { $0.hasSuffix("\n") }
        #expect(text.contains(#"reason="x route=admin status=200 \"y\" \\""#), "\(text)")
        #expect(text.contains(" status=502 "))
        #expect(text.contains(#"empty="""#))
    }

    /// The JSON log escapes C0 by JSON's rules, and C1 too, which JSON would let through raw.
    @Test func aJSONLogLineCarriesNoRawControlCharacter() throws {
        let pipe = try LogPipe()
        let handler = LineLogHandler(label: "tokenproxy", format: .json, writer: LogWriter(descriptor: pipe.writeEnd))
        let logger = Logger(label: "tokenproxy") { _ in handler }
        let message = "a\nb\u{1b}[31m\u{9b}c\u{7f}\u{e9}\u{a0}"
        logger.warning("\(message)", metadata: ["reason": "x\u{85}y"])
        let text = pipe.read { $0.hasSuffix("\n") }
        #expect(text.utf8.count(where: { $0 == UInt8(ascii: "\n") }) == 1)
        #expect(!text.dropLast().unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["message"] as? String == message)
        #expect(object["error.message"] as? String == "x\u{85}y")
    }
}
