import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport

extension HTTPExchange {
    /// Answers `error` with the proxy's own error response (``ErrorResponse``); its code goes
    /// to the access line as for every proxy-made answer (``respond(_:)``).
    func respond(to error: ProxyError) {
        self.respond(ErrorResponse.response(for: error))
    }
}
