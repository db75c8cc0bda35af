/// Byte-level comparisons of ASCII text, for header names and tokens held as bytes.
package enum ASCII {
    /// Whether `x` and `y` are equal ignoring the case of ASCII letters only (RFC 9110 §5.1).
    package static func equalsIgnoringCase(
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

    /// ``equalsIgnoringCase(_:_:)-(some RandomAccessCollection<UInt8>,_)`` for two buffers: a
    /// caller in another layer gets a call with no generic parameters whatever the build
    /// specializes across layers (unspecialized, the generic one reads each byte through a
    /// coroutine whose frame is allocated).
    package static func equalsIgnoringCase(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        for index in 0..<x.count where x[index] != y[index] {
            let folded = x[index] | 0x20
            guard folded == y[index] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                return false
            }
        }
        return true
    }

    /// `bytes` with ASCII capital letters made small, other bytes kept.
    package static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }
    }
}
