extension Duration {
    /// The duration in whole milliseconds, rounded toward zero: for log fields, metrics and
    /// the millisecond arguments of libcurl and `poll(2)`.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = self.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
