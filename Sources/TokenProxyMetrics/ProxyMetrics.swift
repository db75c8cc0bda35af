import CoreMetrics
import Prometheus
import Synchronization
import TokenProxySupport

/// The proxy's metrics (`docs/reference/metrics.md`), recorded through swift-metrics into a
/// Prometheus registry of their own and exposed in the Prometheus text format.
///
/// Each service holds one instance and hands the factory to swift-metrics explicitly, so the
/// process-wide `MetricsSystem` is never bootstrapped and several services in one process
/// (tests) keep separate counts. Label values come only from the configuration (route and
/// provider names) and from fixed words (status classes, results, error kinds), so no request
/// can create a series.
package final class ProxyMetrics: Sendable {
    /// The `route` label of a request that matched no route (or was refused before routing).
    package static let noRoute = "none"
    /// The `route` label of a request to an admin endpoint.
    package static let adminRoute = "admin"

    /// Why an upstream exchange failed: the `kind` label of `tokenproxy_upstream_errors_total`
    /// is the raw value.
    package enum UpstreamErrorKind: String, Sendable, Equatable, CaseIterable {
        /// No response: connect or TLS failure, reset before the head (502 `upstream_unreachable`).
        case unreachable
        /// No response head within the first-byte timeout (504 `upstream_timeout`).
        case timeout
        /// The response broke off after its head went out; the client connection was aborted.
        case aborted
    }

    /// The metric names and their `# HELP` texts.
    static let help: [String: String] = [
        Names.requests: "Requests answered, by route and status class.",
        Names.duration: "Time from the request head to the end of the response, by route.",
        Names.upstreamErrors: "Upstream exchanges that failed, by route and kind.",
        Names.tokenRequests: "Requests to token endpoints, by provider and result.",
        Names.openConnections: "Open client connections on every listener.",
        Names.tokenExpiresIn: "Seconds until the provider's current access token expires.",
        Names.replays: "Requests replayed after a 401 from the upstream, by route.",
        Names.resends: "Requests resent on a new connection after a reused upstream connection failed, by route.",
        Names.tokenStoreErrors: "Token store operations that failed or values it refused, by store and kind.",
        Names.dpopProofs: "DPoP proofs signed, by provider.",
        Names.dpopNonceRetries: "Requests sent again with the DPoP nonce a server asked for, by provider and where.",
    ]

    enum Names {
        static let requests = "tokenproxy_requests_total"
        static let duration = "tokenproxy_request_duration_seconds"
        static let upstreamErrors = "tokenproxy_upstream_errors_total"
        static let tokenRequests = "tokenproxy_token_requests_total"
        static let openConnections = "tokenproxy_open_connections"
        static let tokenExpiresIn = "tokenproxy_token_expires_in_seconds"
        static let replays = "tokenproxy_replays_total"
        static let resends = "tokenproxy_resends_total"
        static let tokenStoreErrors = "tokenproxy_token_store_errors_total"
        static let dpopProofs = "tokenproxy_dpop_proofs_total"
        static let dpopNonceRetries = "tokenproxy_dpop_nonce_retries_total"
    }

    /// Where a server asked for a DPoP nonce: the `at` label of
    /// `tokenproxy_dpop_nonce_retries_total` is the raw value.
    package enum NonceRetryPlace: String, Sendable, Equatable {
        /// The token endpoint (400 `use_dpop_nonce`, RFC 9449 §8).
        case tokenEndpoint = "token_endpoint"
        /// An upstream (401 with `error="use_dpop_nonce"`, RFC 9449 §9).
        case upstream
    }

    /// The upper bounds of the request duration buckets, in seconds.
    static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        .seconds(30), .seconds(60),
    ]

    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let table: SeriesTable
    private let expiryGauges = Mutex<[String: Expiry]>([:])
    private let openConnections: CoreMetrics.Gauge

    /// Each route's series, found by the route's name: the same object for every
    /// configuration that has the route, so that a reload keeps counting into it.
    private let routeSeries = Mutex<[String: RouteSeries]>([:])

    /// The series that every answered request of one route records into: taken once per
    /// configuration for each route (``series(forRoute:)``), so that a request's path hashes
    /// no name and makes no label array. Each series is made the first time it is needed:
    /// a status class no request has had yet shows no line.
    package final class RouteSeries: Sendable {
        /// The route's name, its `route` label.
        package let route: String
        private let table: SeriesTable
        private let made = Mutex(Made())

        private struct Made {
            /// `tokenproxy_requests_total` by status class: `none`, then `1xx` to `5xx`.
            var requests: [CoreMetrics.Counter?] = Array(repeating: nil, count: ProxyMetrics.statusClasses.count)
            /// `tokenproxy_request_duration_seconds`, once a duration was recorded.
            var duration: CoreMetrics.Timer?
        }

        fileprivate init(route: String, table: SeriesTable) {
            self.route = route
            self.table = table
        }

        /// Counts one answered request and, when known, its duration.
        package func requestFinished(status: Int?, duration: Duration?) {
            self.requestFinished(status: status, nanoseconds: duration.map(\.saturatingNanoseconds))
        }

        /// Counts one answered request and, when known, its duration in nanoseconds (as the
        /// request path measures it, with no `Duration` to convert).
        package func requestFinished(status: Int?, nanoseconds: Int64?) {
            let statusIndex = ProxyMetrics.statusClassIndex(status)
            let found = self.made.withLockedValue { ($0.requests[statusIndex], $0.duration) }
            let counter =
                found.0
                ?? {
                    let counter = self.table.counter(
                        Names.requests,
                        [("route", self.route), ("status", ProxyMetrics.statusClasses[statusIndex])]
                    )
                    self.made.withLockedValue { $0.requests[statusIndex] = counter }
                    return counter
                }()
            counter.increment()
            guard let nanoseconds else { return }
            let timer =
                found.1
                ?? {
                    let timer = self.table.timer(route: self.route)
                    self.made.withLockedValue { $0.duration = timer }
                    return timer
                }()
            timer.recordNanoseconds(nanoseconds)
        }
    }

    /// Every counter and timer, found or made by name and labels; shared by the metrics and
    /// the routes' series.
    fileprivate final class SeriesTable: Sendable {
        private let factory: PrometheusMetricsFactory
        private let counters = Mutex<[SeriesKey: CoreMetrics.Counter]>([:])
        private let timers = Mutex<[String: CoreMetrics.Timer]>([:])

        init(factory: PrometheusMetricsFactory) {
            self.factory = factory
        }

        func counter(_ name: String, _ labels: [(String, String)]) -> CoreMetrics.Counter {
            let key = SeriesKey(name: name, labels: labels.map(\.1))
            let factory = self.factory
            return self.counters.withLockedValue { counters in
                if let existing = counters[key] {
                    return existing
                }
                let counter = CoreMetrics.Counter(label: name, dimensions: labels, factory: factory)
                counters[key] = counter
                return counter
            }
        }

        func timer(route: String) -> CoreMetrics.Timer {
            let factory = self.factory
            return self.timers.withLockedValue { timers in
                if let existing = timers[route] {
                    return existing
                }
                let timer = CoreMetrics.Timer(label: Names.duration, dimensions: [("route", route)], factory: factory)
                timers[route] = timer
                return timer
            }
        }
    }

    fileprivate struct SeriesKey: Hashable {
        var name: String
        var labels: [String]
    }

    private struct Expiry {
        var gauge: CoreMetrics.Gauge
        var expiresAt: ContinuousClock.Instant?
    }

    /// Creates an empty set of metrics with a registry of its own.
    package init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[Names.duration] = Self.durationBuckets
        self.registry = registry
        self.factory = factory
        self.table = SeriesTable(factory: factory)
        self.openConnections = CoreMetrics.Gauge(label: Names.openConnections, factory: factory)
    }

    /// The `status` label: the status class (`2xx` ... `5xx`), or `none` when no response
    /// head was sent (the client left, or the exchange was aborted before an answer).
    static func statusClass(_ status: Int?) -> String {
        Self.statusClasses[Self.statusClassIndex(status)]
    }

    /// The `status` labels, by ``statusClassIndex(_:)``.
    fileprivate static let statusClasses = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"]

    /// 1 to 5 for a status of 1xx to 5xx, 0 for none or one out of range.
    fileprivate static func statusClassIndex(_ status: Int?) -> Int {
        guard let status, (100...599).contains(status) else { return 0 }
        return status / 100
    }

    /// Counts one answered request of `route` and, when known, its duration.
    package func requestFinished(route: String, status: Int?, duration: Duration?) {
        self.series(forRoute: route).requestFinished(status: status, duration: duration)
    }

    /// The series of `route` (a configured route's name or one of the fixed labels), for
    /// a caller that records many requests of it.
    package func series(forRoute route: String) -> RouteSeries {
        let table = self.table
        return self.routeSeries.withLockedValue { series in
            if let existing = series[route] {
                return existing
            }
            let made = RouteSeries(route: route, table: table)
            series[route] = made
            return made
        }
    }

    /// Counts one failed upstream exchange of `route`.
    package func upstreamFailed(route: String, kind: UpstreamErrorKind) {
        self.counter(Names.upstreamErrors, [("route", route), ("kind", kind.rawValue)]).increment()
    }

    /// Counts one replay of a request of `route` after a 401.
    package func replayed(route: String) {
        self.counter(Names.replays, [("route", route)]).increment()
    }

    /// Counts one request of `route` sent again on a new connection after a reused upstream
    /// connection failed before any answer.
    package func resent(route: String) {
        self.counter(Names.resends, [("route", route)]).increment()
    }

    /// Counts one failure of the shared token store (`store`: `redis`; `kind`: `unreachable`,
    /// `refused`, or `rejected_value` for a value that did not open under its key).
    package func tokenStoreError(store: String, kind: String) {
        self.counter(Names.tokenStoreErrors, [("store", store), ("kind", kind)]).increment()
    }

    /// Counts one token request for `provider` (retries of a transient failure within it
    /// included) by whether it gave a token.
    package func tokenRequested(provider: String, succeeded: Bool) {
        self.counter(Names.tokenRequests, [("provider", provider), ("result", succeeded ? "success" : "error")])
            .increment()
    }

    /// Counts one DPoP proof signed for `provider` (a token request's or a forwarded request's).
    package func dpopProofMade(provider: String) {
        self.counter(Names.dpopProofs, [("provider", provider)]).increment()
    }

    /// Counts one request of `provider`'s sent again with a server's DPoP nonce.
    package func dpopNonceRetried(provider: String, at place: NonceRetryPlace) {
        self.counter(Names.dpopNonceRetries, [("provider", provider), ("at", place.rawValue)]).increment()
    }

    /// Records the expiry of `provider`'s current token (`nil`: none given, valid until a
    /// 401), for `tokenproxy_token_expires_in_seconds`.
    package func tokenObtained(provider: String, expiresAt: ContinuousClock.Instant?) {
        let factory = self.factory
        self.expiryGauges.withLockedValue { gauges in
            if gauges[provider] == nil {
                let gauge = CoreMetrics.Gauge(
                    label: Names.tokenExpiresIn,
                    dimensions: [("provider", provider)],
                    factory: factory
                )
                gauges[provider] = Expiry(gauge: gauge, expiresAt: expiresAt)
            } else {
                gauges[provider]?.expiresAt = expiresAt
            }
        }
    }

    /// The Prometheus text exposition (version 0.0.4) of every series, with the gauges that
    /// depend on the time of the scrape brought up to date first.
    package func exposition(openConnections: Int) -> [UInt8] {
        self.openConnections.record(openConnections)
        let now = ContinuousClock.now
        self.expiryGauges.withLockedValue { gauges in
            for expiry in gauges.values {
                guard let expiresAt = expiry.expiresAt else {
                    // No expiry known: the token is valid until a 401.
                    expiry.gauge.record(-1)
                    continue
                }
                let left = Double((expiresAt - now).milliseconds) / 1000
                expiry.gauge.record(max(0, left))
            }
        }
        return Self.addingHelp(to: self.registry.emitToBuffer())
    }

    /// The content type of ``exposition(openConnections:)``.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Puts a `# HELP` line before each family's `# TYPE` line. The registry writes help only
    /// for metrics it made itself; swift-metrics handlers carry none.
    static func addingHelp(to text: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(text.count + 1024)
        let typePrefix = Array("# TYPE ".utf8)
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            if line.starts(with: typePrefix) {
                let rest = line.dropFirst(typePrefix.count)
                let name = String(decoding: rest.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = Self.help[name] {
                    output.append(contentsOf: "# HELP \(name) \(help)\n".utf8)
                }
            }
            output.append(contentsOf: line)
            output.append(UInt8(ascii: "\n"))
        }
        return output
    }

    private func counter(_ name: String, _ labels: [(String, String)]) -> CoreMetrics.Counter {
        self.table.counter(name, labels)
    }
}
