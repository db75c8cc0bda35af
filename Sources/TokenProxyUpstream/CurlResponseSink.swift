/// Where a transfer's response goes. An object: the transfer holds it as a reference, so that
/// keeping and passing it retains one object rather than copying a boxed value.
package protocol CurlResponseSink: AnyObject, Sendable {
    /// Takes what one engine turn collected (called on the engine); must report body bytes
    /// back with ``CurlTransfer/bodyDelivered(_:consumerWritable:)``.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer)
    /// The request body buffer drained: a paused producer may continue.
    func resumeRequestBody()
    /// The upstream's `Location` value mapped onto the proxy (the proxy's routes know how
    /// upstream URLs map back onto its paths), or `nil` to leave it as it came; called on the
    /// engine with the final head.
    func rewrittenLocation(_ location: String) -> String?
}

extension CurlResponseSink {
    /// The proxy's own requests leave `Location` as it came.
    package func rewrittenLocation(_ location: String) -> String? { nil }
}
