/// Reads a 401's `WWW-Authenticate` for the DPoP challenge that asks for a nonce
/// (`DPoP error="use_dpop_nonce"`, RFC 9449 §9; challenge syntax RFC 9110 §11.6.1).
package enum DPoPChallenge {
    /// Whether one of `values` (the answer's `WWW-Authenticate` fields) holds a `DPoP`
    /// challenge whose `error` is `use_dpop_nonce`.
    package static func asksForNonce(_ values: [String]) -> Bool {
        values.contains { Self.asksForNonce($0) }
    }

    private static func asksForNonce(_ value: String) -> Bool {
        // Elements are split at commas outside quoted strings; an element that does not
        // start with `name=` starts a challenge (its scheme, maybe followed by a first
        // parameter).
        var scheme = ""
        for element in Self.elements(value) {
            var rest = element[...]
            if let space = rest.firstIndex(of: " "), !rest[..<space].contains("="),
                rest[space...].drop(while: { $0 == " " }).first != "="
            {
                scheme = rest[..<space].lowercased()
                rest = rest[rest.index(after: space)...].drop(while: { $0 == " " })
            } else if !rest.contains("=") {
                scheme = rest.lowercased()
                continue
            }
            guard scheme == "dpop", let equals = rest.firstIndex(of: "=") else { continue }
            let name = rest[..<equals].trimmingSpaces().lowercased()
            var parameter = rest[rest.index(after: equals)...].trimmingSpaces()
            if parameter.hasPrefix("\""), parameter.hasSuffix("\""), parameter.count >= 2 {
                parameter = parameter.dropFirst().dropLast()
            }
            if name == "error", parameter == "use_dpop_nonce" {
                return true
            }
        }
        return false
    }

    /// `value` split at the commas outside quoted strings, each part trimmed.
    private static func elements(_ value: String) -> [String] {
        var elements: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in value {
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ",", !quoted {
                elements.append(String(current.trimmingSpaces()))
                current = ""
                continue
            }
            current.append(character)
        }
        elements.append(String(current.trimmingSpaces()))
        return elements.filter { !$0.isEmpty }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmingSpaces() -> SubSequence {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        guard let first = self.firstIndex(where: { !isSpace($0) }), let last = self.lastIndex(where: { !isSpace($0) })
        else { return self[self.endIndex...] }
        return self[first...last]
    }
}
