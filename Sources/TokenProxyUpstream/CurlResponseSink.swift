/// Where a transfer's response goes.
package protocol CurlResponseSink: Sendable {
    /// Takes what one engine turn collected (called on the engine); must report body bytes
    /// back with ``CurlTransfer/bodyDelivered(_:consumerWritable:)``.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer)
    /// The request body buffer drained: a paused producer may continue.
    func resumeRequestBody()
}
