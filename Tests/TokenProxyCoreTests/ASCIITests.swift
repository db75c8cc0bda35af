import Testing

@testable import TokenProxyHTTP

/// Byte comparisons that ignore the case of ASCII letters and nothing else.
struct ASCIITests {
    /// The buffer version and the generic one agree, and only letters fold: `@` and a
    /// backquote, `[` and `{`, a digit and a control byte 0x20 apart stay different.
    @Test func onlyASCIILettersCompareWithoutCase() {
        let pairs: [(String, String, Bool)] = [
            ("Host", "host", true), ("X-FORWARDED-FOR", "x-forwarded-for", true), ("", "", true),
            ("a", "b", false), ("ab", "a", false), ("@", "`", false), ("[", "{", false),
            ("0", "\u{10}", false), ("^", "~", false), ("\u{212A}", "k", false), ("é", "É", false),
        ]
        for (x, y, equal) in pairs {
            let a = Array(x.utf8)
            let b = Array(y.utf8)
            let buffers = a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in ASCII.equalsIgnoringCase(a, b) }
            }
            #expect(buffers == equal, "\(x) \(y)")
            #expect(ASCII.equalsIgnoringCase(a, b) == equal, "\(x) \(y)")
        }
    }
}
