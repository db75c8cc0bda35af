import Foundation

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's serializer): what token
/// requests carry, and what `client_secret_basic` encodes the id and secret with first
/// (RFC 6749 §2.3.1).
enum FormEncoding {
    static func encode(_ value: String) -> String {
        var output = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                output += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return output
    }

    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(self.encode($0.0))=\(self.encode($0.1))" }.joined(separator: "&")
    }

    /// The name-value pairs of a query string or form body, `+` read as a space; a pair whose
    /// percent-encoding is not valid UTF-8 is dropped.
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

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - self.count)) + self
    }
}
