import Foundation

/// Numbers of seconds that come from outside the process (a peer's header or JSON, the token
/// store file, a command's output): read strictly, and turned into a `Duration` only once
/// finite and clamped, so no value a peer sends can overflow a conversion.
/// See `docs/reference/security.md` for the bounds each source gets.
package enum BoundedSeconds {
    /// The longest duration ever made from an outside number: ten years. Longer lifetimes
    /// are refused where they are parsed; this bound keeps every conversion finite.
    static let maximum: Double = 10 * 366 * 86400

    /// The longest token lifetime believed (`expires_in` of a token response or a command's
    /// output): ten years. Longer is a server bug, not a real token, and the answer fails.
    package static let maximumLifetime: Double = Self.maximum

    /// `seconds` as a `Duration`: NaN and negatives become zero, anything above `limit` (and
    /// +infinity) becomes `limit`, itself at most ``maximum``.
    package static func duration(_ seconds: Double, atMost limit: Double = Self.maximum) -> Duration {
        .milliseconds(Int64((self.clamp(seconds, atMost: limit) * 1000).rounded()))
    }

    /// `seconds` clamped to `0...limit` (NaN gives zero, +infinity gives `limit`); `limit` is
    /// itself clamped to ``maximum``.
    package static func clamp(_ seconds: Double, atMost limit: Double = Self.maximum) -> Double {
        let upper = limit.isFinite ? min(max(limit, 0), self.maximum) : self.maximum
        guard !seconds.isNaN else { return 0 }
        return min(max(seconds, 0), upper)
    }

    /// A JSON number or numeric string, when finite: an `NSNumber` or a string a decimal
    /// number parses from. NaN, infinities and other types give nil.
    package static func number(_ value: Any?) -> Double? {
        let parsed: Double?
        if let number = value as? NSNumber {
            parsed = number.doubleValue
        } else if let text = value as? String {
            parsed = Self.decimal(text)
        } else {
            parsed = nil
        }
        guard let parsed, parsed.isFinite else { return nil }
        return parsed
    }

    /// A plain decimal number (`12`, `-3`, `1.5`, `2e3`): no `nan`, `inf`, hex or spaces.
    static func decimal(_ text: String) -> Double? {
        guard !text.isEmpty,
            text.utf8.allSatisfy({ byte in
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "e")
                    || byte == UInt8(ascii: "E")
            }),
            let value = Double(text), value.isFinite
        else { return nil }
        return value
    }

    /// The delay a `Retry-After` value asks for (RFC 9110 §10.2.3), from `now`: delta-seconds
    /// (`1*DIGIT`) or an HTTP-date in any of the three forms a recipient accepts (§5.6.7);
    /// a date in the past is zero. Anything else (`1e300`, `-5`, `infinity`) is nil, read as
    /// no Retry-After. The result is clamped to ``maximum``.
    package static func retryAfter(_ value: String, now: Date = Date()) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            // Digits only: at worst a huge finite number, which is clamped.
            return self.clamp(Double(text) ?? self.maximum)
        }
        guard let date = self.httpDate(text) else { return nil }
        return self.clamp(date.timeIntervalSince(now))
    }

    /// IMF-fixdate, obsolete RFC 850 and asctime dates (RFC 9110 §5.6.7), always GMT.
    static func httpDate(_ text: String) -> Date? {
        guard text.count <= 64 else { return nil }
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text.replacingOccurrences(of: "  ", with: " ")),
                date.timeIntervalSince1970.isFinite
            {
                return date
            }
        }
        return nil
    }
}
