import Foundation

/// Serializes the proxy's own JSON bodies (errors, admin documents) with stable key order.
package enum JSONOutput {
    /// Encodes `value` as compact JSON with sorted keys and a trailing newline.
    package static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain structs of strings and numbers cannot fail; an empty object is a safe fallback.
        var bytes = (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
