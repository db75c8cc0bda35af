import Dispatch
import TokenProxySupport

/// Serves exchanges: the seam between the HTTP server and what the proxy does with a request.
package protocol HTTPExchangeHandler: Sendable {
    /// Called in the exchange's context once a request head is complete. The handler must
    /// eventually respond (``HTTPExchange/respond(_:)``, or head, body and finish) or abort.
    func handle(_ exchange: HTTPExchange)

    /// Called when the connection rejects a request before any exchange could own it
    /// (malformed framing, header deadline), after the error answer was queued; for logs.
    func requestRejected(_ error: ProxyError, remoteAddress: String)
}

extension HTTPExchangeHandler {
    /// Rejections are not reported by default.
    package func requestRejected(_ error: ProxyError, remoteAddress: String) {}
}
