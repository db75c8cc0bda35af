import TokenProxyMetrics
import TokenProxyServer

/// How an exchange's request went upstream: what its access-log line and the metrics report
/// beside the status (`docs/reference/log-fields.md`, `docs/reference/metrics.md`). The
/// forwarder fills it in as the request's life unfolds, before the exchange ends, so that
/// whoever reads it when the exchange completes sees the whole story, including for a client
/// that left early.
package struct ForwardingOutcome: Sendable, Equatable {
    /// Why the upstream exchange failed: the metrics' error kinds.
    package typealias UpstreamFailure = ProxyMetrics.UpstreamErrorKind

    /// The request waited for a token fetched (or refreshed) while it waited.
    package var tokenRefreshed = false
    /// A 401 from the upstream was dropped and the request sent again with a new credential.
    package var replayed = false
    /// The request was sent again on a new connection after a reused one failed before any
    /// answer, by the proxy or by libcurl itself.
    package var resent = false
    /// A 401 asked for a DPoP nonce, and the request was sent again with it (RFC 9449 §9).
    package var nonceRetried = false
    /// How the upstream exchange failed, when it did.
    package var upstreamFailure: UpstreamFailure?

    /// Nothing happened beyond a plain request (also a request that was never forwarded).
    package init() {}
}

/// The observer of an exchange that has no ``ForwardingAttempt`` to report it (one the proxy
/// answers itself, or a tunnel): where its ``ForwardingOutcome`` is left for the access line
/// and the metrics, read when the exchange completes. Confined, like the exchange, to the
/// connection's context.
package final class ForwardingRecord: HTTPExchangeObserver {
    /// How the request went upstream so far.
    package var outcome = ForwardingOutcome()
    /// Where the access line and the metrics go when the exchange completes.
    let report: AccessReport

    /// An empty record (a plain request so far), reported by `report` when its exchange
    /// completes.
    init(report: AccessReport) {
        self.report = report
    }

    /// Makes a new record, reported by `report`, `exchange`'s observer, and returns it.
    @discardableResult
    package static func observe(_ exchange: HTTPExchange, reportedBy report: AccessReport) -> ForwardingRecord {
        let record = ForwardingRecord(report: report)
        exchange.observer = record
        return record
    }

    package func exchangeCompleted(_ exchange: HTTPExchange, finished: Bool) {
        self.report.exchangeCompleted(exchange, outcome: self.outcome, finished: finished)
    }
}

@available(*, unavailable)
extension ForwardingRecord: Sendable {}
