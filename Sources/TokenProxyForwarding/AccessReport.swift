import Logging
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport

/// What an exchange's access line and metrics need once it completes. Its observer (a
/// ``ForwardingRecord``, or the request's ``ForwardingAttempt``) hands it the exchange and
/// the ``ForwardingOutcome`` when it ends. An object made once per route and configuration
/// (``RouteServices``), so that a request takes it as one reference.
package final class AccessReport: Sendable {
    let logger: Logger
    let metrics: ProxyMetrics
    /// The route named on the access line.
    let route: String
    /// The series the metrics count the request in (its route is the `route` label).
    let series: ProxyMetrics.RouteSeries
    /// Whether access lines are written at the logger's level.
    let logs: Bool

    /// A report to `logger` (access lines, when its level writes them) and `metrics`, on the
    /// access line as `route`, counted in `series`.
    init(logger: Logger, metrics: ProxyMetrics, route: String, series: ProxyMetrics.RouteSeries) {
        self.logger = logger
        self.metrics = metrics
        self.route = route
        self.series = series
        self.logs = logger.logLevel <= .info
    }

    /// Records the metrics and writes the access line (`docs/reference/log-fields.md`) of
    /// `exchange`, which has just ended (`finished` when its response was complete) after
    /// going upstream as `outcome` says. The query is never logged: it may carry keys.
    func exchangeCompleted(_ exchange: HTTPExchange, outcome: ForwardingOutcome, finished: Bool) {
        ExchangeMetrics.record(exchange, outcome: outcome, series: self.series, in: self.metrics)
        guard self.logs else { return }
        var metadata: Logger.Metadata = [
            "method": "\(exchange.head.method)",
            "path": "\(exchange.head.path)",
            "route": "\(self.route)",
            "status": "\(exchange.responseStatus ?? 0)",
            "duration_ms": "\((MonotonicTime.now - exchange.startTime).milliseconds)",
            "bytes": "\(exchange.responseBodyBytes)",
            "client": "\(exchange.remoteAddress)",
        ]
        if !finished {
            metadata["aborted"] = "true"
        }
        if exchange.isTunnel {
            // One line per tunnel at its end: bytes each way, and its whole duration.
            metadata["tunnel"] = "true"
            metadata["request_bytes"] = "\(exchange.requestBodyBytes)"
        }
        for (key, value) in exchange.logFields {
            metadata[key] = .string(value)
        }
        Self.addOutcome(outcome, to: &metadata)
        self.logger.info("request", metadata: metadata)
    }

    /// The access line's fields for how the request went upstream.
    private static func addOutcome(_ outcome: ForwardingOutcome, to metadata: inout Logger.Metadata) {
        if outcome.tokenRefreshed {
            metadata["token_refreshed"] = "true"
        }
        if outcome.replayed {
            metadata["replayed"] = "true"
        }
        if outcome.resent {
            metadata["resent"] = "true"
        }
        if outcome.nonceRetried {
            metadata["nonce_retried"] = "true"
        }
        if let failure = outcome.upstreamFailure {
            metadata["upstream_error"] = .string(failure.rawValue)
        }
    }
}
