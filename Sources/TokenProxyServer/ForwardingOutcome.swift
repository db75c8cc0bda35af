/// How an exchange's request went upstream: what its access-log line and the metrics report
/// beside the status (`docs/reference/log-fields.md`, `docs/reference/metrics.md`). The forwarder fills it in
/// as the request's life unfolds, before the exchange ends, so that whoever reads it when the
/// exchange completes sees the whole story, including for a client that left early.
package struct ForwardingOutcome: Sendable, Equatable {
    /// Why the upstream exchange failed.
    package enum UpstreamFailure: String, Sendable, Equatable, CaseIterable {
        /// No response: connect or TLS failure, reset before the head (502 `upstream_unreachable`).
        case unreachable
        /// No response head within the first-byte timeout (504 `upstream_timeout`).
        case timeout
        /// The response broke off after its head went out; the client connection was aborted.
        case aborted
    }

    /// The request waited for a token fetched (or refreshed) while it waited.
    package var tokenRefreshed = false
    /// A 401 from the upstream was dropped and the request sent again with a new credential.
    package var replayed = false
    /// The request was sent again on a new connection after a reused one failed before any
    /// answer, by the proxy or by libcurl itself.
    package var resent = false
    /// How the upstream exchange failed, when it did.
    package var upstreamFailure: UpstreamFailure?

    /// Nothing happened beyond a plain request (also a request that was never forwarded).
    package init() {}
}
