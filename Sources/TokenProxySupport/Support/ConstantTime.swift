import Foundation

/// Comparison whose duration does not depend on where two secrets first differ.
package enum ConstantTime {
    /// Whether `a` equals `b`, examining every byte of the longer input.
    package static func equals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for index in 0..<max(x.count, y.count) {
            let left = index < x.count ? x[index] : 0
            let right = index < y.count ? y[index] : 0
            difference |= left ^ right
        }
        return difference == 0 && x.count == y.count
    }
}
