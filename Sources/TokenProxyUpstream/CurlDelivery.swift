import TokenProxyHTTP
import TokenProxySupport

/// What the engine collected for a transfer's sink during one turn: delivered together, so
/// a client gets one hop and one flush however many callbacks libcurl made.
package struct CurlDelivery: Sendable {
    /// How the transfer ended.
    package enum End: Sendable, Equatable {
        /// The whole response arrived.
        case finish
        /// The response broke off after its head.
        case abort
        /// No response head arrived; the client is answered with this error.
        case fail(ProxyError)
        /// No byte of a response arrived because the connection, one reused from the cache,
        /// failed: sending the request failed, receiving failed, or the upstream closed it
        /// without a word. Usually the upstream had closed that kept-alive connection as the
        /// request went out (RFC 9112 §9.3.1), but it may have received the request. Answered
        /// with this error unless the request is sent again.
        case lostReusedConnection(ProxyError)
    }

    package var head: HTTPResponseHead?
    package var body: [UInt8] = []
    package var bodyBytes = 0
    package var end: End?
    /// Set on the delivery with the head or the end when libcurl sent the request more than
    /// once (it does so by itself when a cached connection turns out closed before any answer).
    package var resentByLibcurl = false

    var isEmpty: Bool {
        // Matched rather than compared with nil: `== nil` copied the head and the end first.
        guard self.body.isEmpty, case .none = self.head, case .none = self.end else { return false }
        return true
    }
}
