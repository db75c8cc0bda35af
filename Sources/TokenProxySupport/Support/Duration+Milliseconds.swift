extension Duration {
    /// The duration in whole milliseconds, rounded toward zero: for log fields, metrics and
    /// the millisecond arguments of libcurl and `poll(2)`.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = self.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension Duration {
    /// The duration in whole nanoseconds, rounded toward zero, saturating at the ends of
    /// `Int64` (about 292 years either way): for `MonotonicTime` and the metrics' timers.
    package var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !sumOverflow else { return seconds < 0 ? .min : .max }
        return sum
    }
}
