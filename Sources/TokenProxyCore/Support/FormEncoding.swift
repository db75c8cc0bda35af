import Foundation

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's serializer): what token
/// requests carry, and what `client_secret_basic` encodes the id and secret with first
/// (RFC 6749 §2.3.1).
enum FormEncoding {
    /// `value` form-encoded: a space as `+`, every byte but `A-Z a-z 0-9 * - . _` as `%XX`.
    static func encode(_ value: String) -> String {
        PercentEncoding.encode(value, keeping: .form, spaceAsPlus: true)
    }

    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(self.encode($0.0))=\(self.encode($0.1))" }.joined(separator: "&")
    }

    /// The name-value pairs of a query string or form body, `+` read as a space; a pair whose
    /// percent-encoding is not valid UTF-8 is dropped.
    /// The value of `name` in `pairs` when it occurs exactly once: where a repeated parameter
    /// is ambiguous (RFC 6749 §3.1, RFC 5849's answers), it counts as absent.
    static func single(_ name: String, in pairs: [(String, String)]) -> String? {
        let values = pairs.filter { $0.0 == name }
        return values.count == 1 ? values[0].1 : nil
    }

    /// The name-value pairs of `form`, or nil when a pair's percent-encoding is not valid
    /// UTF-8: where a parameter must not be given twice, a pair that cannot be read may be
    /// the second one.
    static func decodeStrictly(_ form: some StringProtocol) -> [(String, String)]? {
        let pairs = self.decode(form)
        return pairs.count == form.split(separator: "&").count ? pairs : nil
    }

    static func decode(_ form: some StringProtocol) -> [(String, String)] {
        form.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard let name = parts[0], let value = parts.count > 1 ? parts[1] : "" else { return nil }
            return (name, value)
        }
    }
}
