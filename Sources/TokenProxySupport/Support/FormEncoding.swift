/// `application/x-www-form-urlencoded` (the WHATWG URL standard, "application/x-www-form-urlencoded";
/// RFC 1866 §8.2.1): what token requests carry, what a form answer from a token endpoint or an
/// OAuth 1 provider holds, what a login's callback query is, and what `client_secret_basic`
/// encodes the id and secret with first (RFC 6749 §2.3.1).
///
/// The one encoder and the one decoder of forms in the proxy. The decoder is strict where the
/// standard is lenient: a `%` not followed by two hex digits, or bytes that are not UTF-8 once
/// decoded, fail the whole input. A pair dropped or patched up could otherwise hide a second
/// `access_token`, `state` or `oauth_token` from the check that refuses one given twice.
package enum FormEncoding {
    /// `value` form-encoded: a space as `+`, every byte but `A-Z a-z 0-9 * - . _` as `%XX`.
    package static func encode(_ value: String) -> String {
        PercentEncoding.encode(value, keeping: .form, spaceAsPlus: true)
    }

    /// `pairs` form-encoded, in order, joined by `&`.
    package static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(self.encode($0.0))=\(self.encode($0.1))" }.joined(separator: "&")
    }

    /// The name-value pairs of `form` (a query or a body), in order, or nil when any part of
    /// it cannot be decoded.
    ///
    /// The input is split at `&`, empty pieces skipped; each piece at its first `=` (none: the
    /// value is empty; an empty name is kept as one); in each part `+` is a space and `%XX`
    /// the byte XX. Nil when a `%` is not followed by two hex digits or the decoded bytes of
    /// a name or value are not UTF-8.
    package static func decode(_ form: some StringProtocol) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for piece in Array(form.utf8).split(separator: UInt8(ascii: "&")) {
            let equals = piece.firstIndex(of: UInt8(ascii: "="))
            let name = piece[..<(equals ?? piece.endIndex)]
            let value = equals.map { piece[piece.index(after: $0)...] } ?? piece[piece.endIndex...]
            guard let decodedName = Self.decodeComponent(name), let decodedValue = Self.decodeComponent(value) else {
                return nil
            }
            pairs.append((decodedName, decodedValue))
        }
        return pairs
    }

    /// The value of `name` in `pairs` when it occurs exactly once: where a repeated parameter
    /// is ambiguous (RFC 6749 §3.1 and §4.1.2, RFC 5849 §2.1 and §2.3's answers), it counts
    /// as absent, and the caller refuses what lacks it.
    package static func single(_ name: String, in pairs: [(String, String)]) -> String? {
        var found: String?
        for (key, value) in pairs where key == name {
            guard found == nil else { return nil }
            found = value
        }
        return found
    }

    /// One name or value: `+` as a space, `%XX` as the byte, the result as UTF-8; nil for a
    /// broken escape or bytes that are not UTF-8.
    private static func decodeComponent(_ bytes: ArraySlice<UInt8>) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                let first = bytes.index(after: index)
                guard first != bytes.endIndex else { return nil }
                let second = bytes.index(after: first)
                guard second != bytes.endIndex, let high = Hex.value(of: bytes[first]),
                    let low = Hex.value(of: bytes[second])
                else { return nil }
                decoded.append(high << 4 | low)
                index = second
            default:
                decoded.append(byte)
            }
            index = bytes.index(after: index)
        }
        return String(validating: decoded, as: UTF8.self)
    }
}
