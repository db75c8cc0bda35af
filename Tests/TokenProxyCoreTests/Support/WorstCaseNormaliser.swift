import Foundation

/// How far the most permissive normalising upstream could move a path: it decodes escapes any
/// number of times, takes `\` as `/`, drops `;` path parameters, applies Unicode
/// compatibility mapping, trims trailing dots and spaces from segments, merges empty segments
/// and resolves `.` and `..` (RFC 3986 §5.2.4). Written independently of the proxy's own rule,
/// as the oracle its tests compare against.
enum WorstCaseNormaliser {
    /// Whether every reading of `path` (one per round of decoding) stays under `base`
    /// (segments, such as `["v1", "projectA"]`) without ever climbing above it.
    static func staysUnder(_ base: [String], path: String) -> Bool {
        var reading = path
        for _ in 0..<16 {
            guard let segments = self.resolve(reading), segments.starts(with: base) else { return false }
            let decoded = self.decodeOnce(reading)
            if decoded == reading { return true }
            reading = decoded
        }
        return false
    }

    /// The resolved segments of one reading, or nil when `..` climbs above the root at some
    /// point or a control character appears.
    private static func resolve(_ reading: String) -> [String]? {
        let mapped = reading.precomposedStringWithCompatibilityMapping.replacingOccurrences(of: "\\", with: "/")
        if mapped.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return nil
        }
        var stack: [String] = []
        for raw in mapped.split(separator: "/", omittingEmptySubsequences: true) {
            let segment = raw.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let dots = segment.filter { $0 == "." }.count
            if segment.isEmpty {
                continue
            }
            if segment.allSatisfy({ $0 == "." || $0 == " " }) {
                if dots == 0 || dots == 1 {
                    continue
                }
                // `..`, and what a lenient server might read as it (`.. `, `...`).
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
                continue
            }
            var trimmed = String(segment)
            while let last = trimmed.last, last == "." || last == " " {
                trimmed.removeLast()
            }
            stack.append(trimmed)
        }
        return stack
    }

    /// One round of percent-decoding; invalid escapes and invalid UTF-8 are kept as Latin-1
    /// so that nothing is lost between rounds.
    private static func decodeOnce(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                out.append(value)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self) ?? String(out.map { Character(Unicode.Scalar($0)) })
    }
}
