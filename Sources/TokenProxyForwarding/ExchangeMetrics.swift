import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport

/// Counts a finished exchange in the ``ProxyMetrics``: its status class and duration, and
/// from its ``ForwardingOutcome`` a replay after a 401, a resend after a lost reused
/// connection, and an upstream failure.
enum ExchangeMetrics {
    /// Records `exchange`, which has just ended with `outcome`, in `series` (a configured
    /// route's or one of the fixed labels of ``ProxyMetrics``).
    static func record(
        _ exchange: HTTPExchange,
        outcome: ForwardingOutcome,
        series: ProxyMetrics.RouteSeries,
        in metrics: ProxyMetrics
    ) {
        let route = series.route
        // A tunnel's life is its two sides' to decide, minutes or hours: it is counted (status
        // 1xx) but kept out of the request-duration histogram, whose latency it would swamp.
        let nanoseconds: Int64? = exchange.isTunnel ? nil : MonotonicTime.now.nanoseconds(since: exchange.startTime)
        series.requestFinished(status: exchange.responseStatus, nanoseconds: nanoseconds)
        if outcome.replayed {
            metrics.replayed(route: route)
        }
        if outcome.resent {
            metrics.resent(route: route)
        }
        if let failure = outcome.upstreamFailure {
            metrics.upstreamFailed(route: route, kind: failure)
        }
    }
}
