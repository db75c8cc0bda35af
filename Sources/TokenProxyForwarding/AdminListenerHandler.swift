import Foundation
import Logging
import TokenProxyServer

/// Serves a separate admin listener through the proxy handler's admin endpoints.
package struct AdminListenerHandler: HTTPExchangeHandler {
    private let proxy: ProxyHandler

    /// Creates the handler over `proxy`'s configuration snapshot.
    package init(proxy: ProxyHandler) {
        self.proxy = proxy
    }

    /// Serves the admin endpoint named by the path.
    package func handle(_ exchange: HTTPExchange) {
        self.proxy.handleAdmin(exchange)
    }
}
