extension StringProtocol {
    /// Compares two strings ignoring the case of ASCII letters only, as header names and
    /// tokens are compared (RFC 9110 §5.1).
    package func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        // Native strings expose their bytes: compare those directly, since this runs for
        // header fields of every request and response.
        let fast = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in ASCII.equalsIgnoringCase(x, y) }
        }
        if let fast, let result = fast {
            return result
        }
        return ASCII.equalsIgnoringCase(Array(a), Array(b))
    }

    /// The string without leading and trailing spaces and horizontal tabs (RFC 9110 OWS).
    package func trimmingHTTPWhitespace() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = self.firstIndex(where: { !isOWS($0) }),
            let end = self.lastIndex(where: { !isOWS($0) })
        else { return "" }
        return String(self[start...end])
    }
}
