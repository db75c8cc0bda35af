import Foundation
import Logging
import Synchronization

/// Serves a separate admin listener through the proxy handler's admin endpoints.
public struct AdminListenerHandler: HTTPExchangeHandler {
    private let proxy: ProxyHandler

    /// Creates the handler over `proxy`'s configuration snapshot.
    public init(proxy: ProxyHandler) {
        self.proxy = proxy
    }

    /// Serves the admin endpoint named by the path.
    public func handle(_ exchange: HTTPExchange) {
        self.proxy.handleAdmin(exchange)
    }
}
