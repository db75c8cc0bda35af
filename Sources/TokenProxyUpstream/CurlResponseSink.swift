import CCurl
import CSystemShims
import Dispatch
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a transfer's response goes.
package protocol CurlResponseSink: Sendable {
    /// Takes what one engine turn collected (called on the engine); must report body bytes
    /// back with ``CurlTransfer/bodyDelivered(_:consumerWritable:)``.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer)
    /// The request body buffer drained: a paused producer may continue.
    func resumeRequestBody()
}

/// How a transfer ended, as seen by the client.
package enum CurlTransferOutcome: Sendable, Equatable {
    /// The whole response was relayed.
    case finished
    /// The response broke off after its head; the client connection was aborted.
    case aborted
    /// No response head was relayed; the client got this error.
    case failed(ProxyError)
}
