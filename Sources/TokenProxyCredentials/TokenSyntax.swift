/// What a token must look like to be accepted when it is received (from a token endpoint, a
/// command's output, a static or file secret, the token store), so that a token a header
/// cannot carry is never cached or persisted, and the next fetch can succeed.
///
/// The rule is RFC 6749 Appendix A.12 (`access-token = 1*VSCHAR`, VSCHAR = %x20-7E), without
/// leading or trailing spaces: printable ASCII, so no CR, LF, NUL, HTAB or other control
/// character and no obs-text, which also keeps every `format` template a valid field value
/// (RFC 9110 §5.5). See `docs/reference/security.md`.
enum TokenSyntax {
    /// The longest token accepted, in bytes: far above any real token, well below the
    /// header size limit.
    static let maximumLength = 16 * 1024

    /// Why `value` cannot be used as a token, or nil when it can. Never contains the value.
    static func problem(_ value: String) -> String? {
        let bytes = value.utf8
        guard let first = bytes.first, let last = bytes.last else { return "the token is empty" }
        guard bytes.count <= self.maximumLength else {
            return "the token is longer than \(self.maximumLength) bytes"
        }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            return "the token contains a control character or a non-ASCII byte"
        }
        guard first != 0x20, last != 0x20 else { return "the token starts or ends with a space" }
        return nil
    }
}
