extension StringProtocol {
    /// Compares two strings ignoring the case of ASCII letters only, as header names and
    /// tokens are compared (RFC 9110 §5.1).
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        // Native strings expose their bytes: compare those directly, since this runs for
        // header fields of every request and response.
        let fast = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in Self.equalsIgnoringASCIICase(x, y) }
        }
        if let fast, let result = fast {
            return result
        }
        return Self.equalsIgnoringASCIICase(Array(a), Array(b))
    }

    private static func equalsIgnoringASCIICase(
        _ x: some RandomAccessCollection<UInt8>,
        _ y: some RandomAccessCollection<UInt8>
    ) -> Bool {
        guard x.count == y.count else { return false }
        var i = x.startIndex
        var j = y.startIndex
        while i != x.endIndex {
            let left = x[i]
            let right = y[j]
            if left != right {
                let folded = left | 0x20
                guard folded == right | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                    return false
                }
            }
            x.formIndex(after: &i)
            y.formIndex(after: &j)
        }
        return true
    }

    /// The string without leading and trailing spaces and horizontal tabs (RFC 9110 OWS).
    func trimmingHTTPWhitespace() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = self.firstIndex(where: { !isOWS($0) }),
            let end = self.lastIndex(where: { !isOWS($0) })
        else { return "" }
        return String(self[start...end])
    }
}
