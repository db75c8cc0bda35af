import TokenProxyServer

/// Counts a finished exchange in the ``ProxyMetrics``: its status class and duration, a
/// replay after a 401, a resend after a lost reused connection, and an upstream failure, read
/// from what the forwarder noted in the exchange's log fields.
package enum ExchangeMetrics {
    /// The log field the forwarder sets to a ``ProxyMetrics/UpstreamErrorKind`` raw value when
    /// the upstream exchange failed.
    package static let upstreamErrorField = "upstream_error"

    /// Records `exchange`, which has just ended, under `route` (a configured route's name or
    /// one of the fixed labels of ``ProxyMetrics``).
    package static func record(_ exchange: HTTPExchange, route: String, in metrics: ProxyMetrics) {
        metrics.requestFinished(route: route, status: exchange.responseStatus, duration: .now - exchange.startTime)
        if exchange.logFields["replayed"] == "true" {
            metrics.replayed(route: route)
        }
        if exchange.logFields["resent"] == "true" {
            metrics.resent(route: route)
        }
        if let kind = exchange.logFields[self.upstreamErrorField].flatMap(ProxyMetrics.UpstreamErrorKind.init) {
            metrics.upstreamFailed(route: route, kind: kind)
        }
    }
}
