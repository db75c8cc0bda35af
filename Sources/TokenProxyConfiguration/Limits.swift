import Foundation

/// Resource limits and timeouts (`limits`). Every value must be positive; durations are
/// seconds (fractions allowed) of at most one day.
package struct Limits: Sendable, Equatable, Decodable {
    /// `token_wait_seconds`: how long a request waits for its provider's token, then 502
    /// `token_unavailable`. Default 15.
    package var tokenWaitSeconds: Double = 15
    /// `max_header_bytes`: total size of a request's header section, then 431. Default 65536.
    package var maxHeaderBytes: Int = 65_536
    /// `max_header_count`: number of header fields in a request, then 431. Default 100.
    package var maxHeaderCount: Int = 100
    /// `max_request_line_bytes`: length of the request line, then 414. Default 8192.
    package var maxRequestLineBytes: Int = 8_192
    /// `max_chunk_extension_bytes`: chunk extensions in one chunked body, then 400. Default 16384.
    package var maxChunkExtensionBytes: Int = 16_384
    /// `header_timeout_seconds`: deadline for the whole request head, then 408. Default 10.
    package var headerTimeoutSeconds: Double = 10
    /// `idle_timeout_seconds`: how long an idle keep-alive connection stays open. Default 60.
    package var idleTimeoutSeconds: Double = 60
    /// `replay_buffer_bytes`: request bodies up to this size are spooled so the request can be
    /// replayed after a 401 (RFC 6750 §3.1 `invalid_token`). Default 1048576.
    package var replayBufferBytes: Int = 1_048_576
    /// `max_connections`: open client connections; more get 503 `too_many_connections`. Default 1024.
    package var maxConnections: Int = 1_024
    /// `upstream_connect_timeout_seconds`: connecting to an upstream, then 502. Default 10.
    package var upstreamConnectTimeoutSeconds: Double = 10
    /// `upstream_first_byte_timeout_seconds`: waiting for the upstream's response head, then 504. Default 60.
    package var upstreamFirstByteTimeoutSeconds: Double = 60
    /// `drain_timeout_seconds`: how long SIGTERM/SIGINT wait for in-flight requests. Default 30.
    package var drainTimeoutSeconds: Double = 30
    /// `token_request_seconds`: the whole life of one token request (discovery, connect, TLS,
    /// every retry, the answer's last byte); past it the request is abandoned and its locks
    /// released. Default 30.
    package var tokenRequestSeconds: Double = 30
    /// `token_failure_backoff_seconds`: the longest a failed token request is remembered, during
    /// which requests and probes get its failure instead of a new token request. The first
    /// failure is remembered for 1 s, each further one in a row twice as long, or as long as
    /// the endpoint's Retry-After asks, up to this. Default 30.
    package var tokenFailureBackoffSeconds: Double = 30
    /// `endpoint_idle_seconds`: how long the answer of an identity provider's endpoint (token,
    /// discovery, device authorization, revocation, OAuth 1 token requests) may bring no byte
    /// once the request is sent. Inside the body, this; before the head, the longer of this
    /// and `token_wait_seconds` (``endpointHeadSeconds``), since a provider may think a while
    /// but an answer later than any request waits serves nobody. A miss ends that attempt as a
    /// transient failure, retried within `token_request_seconds`. Default 5: a provider sends
    /// its answer's body in one piece, so five seconds of silence inside it is a stalled
    /// connection, and a recovered endpoint is asked again within `token_wait_seconds` + 5 s.
    package var endpointIdleSeconds: Double = 5

    /// How long an endpoint's head may take once its request is sent: the longer of
    /// `endpoint_idle_seconds` and `token_wait_seconds`.
    package var endpointHeadSeconds: Double { max(self.endpointIdleSeconds, self.tokenWaitSeconds) }
    /// `upstream_idle_seconds`: how long a response body may bring no byte before the exchange
    /// is aborted. Default 60.
    package var upstreamIdleSeconds: Double = 60
    /// `tunnel_idle_seconds`: how long an upgraded connection (a WebSocket tunnel) may carry
    /// no byte either way before both sides are closed. Default 300.
    package var tunnelIdleSeconds: Double = 300
    /// `max_tunnels`: open upgraded connections; more get 503 `too_many_tunnels`. Default 1024.
    package var maxTunnels: Int = 1_024

    /// The longest duration accepted, one day: longer is surely a mistake (milliseconds
    /// written as seconds), and keeps every deadline far from overflow.
    package static let maxSeconds: Double = 86_400

    /// All defaults.
    package init() {}

    /// The integer limits with their JSON keys.
    static var integerKeys: [(key: String, field: WritableKeyPath<Limits, Int>)] {
        [
            ("max_header_bytes", \.maxHeaderBytes),
            ("max_header_count", \.maxHeaderCount),
            ("max_request_line_bytes", \.maxRequestLineBytes),
            ("max_chunk_extension_bytes", \.maxChunkExtensionBytes),
            ("replay_buffer_bytes", \.replayBufferBytes),
            ("max_connections", \.maxConnections),
            ("max_tunnels", \.maxTunnels),
        ]
    }

    /// The durations with their JSON keys.
    static var durationKeys: [(key: String, field: WritableKeyPath<Limits, Double>)] {
        [
            ("token_wait_seconds", \.tokenWaitSeconds),
            ("header_timeout_seconds", \.headerTimeoutSeconds),
            ("idle_timeout_seconds", \.idleTimeoutSeconds),
            ("upstream_connect_timeout_seconds", \.upstreamConnectTimeoutSeconds),
            ("upstream_first_byte_timeout_seconds", \.upstreamFirstByteTimeoutSeconds),
            ("drain_timeout_seconds", \.drainTimeoutSeconds),
            ("token_request_seconds", \.tokenRequestSeconds),
            ("token_failure_backoff_seconds", \.tokenFailureBackoffSeconds),
            ("endpoint_idle_seconds", \.endpointIdleSeconds),
            ("upstream_idle_seconds", \.upstreamIdleSeconds),
            ("tunnel_idle_seconds", \.tunnelIdleSeconds),
        ]
    }

    /// Every JSON key of `limits`.
    static var keys: [String] {
        Self.durationKeys.map(\.key) + Self.integerKeys.map(\.key)
    }

    /// Decodes the object; absent keys keep their defaults.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: Self.keys, problems)
            var limits = Limits()
            for (key, field) in Self.integerKeys {
                if let value = object.configValue(Int.self, forKey: ConfigurationCodingKey(key), problems) {
                    limits[keyPath: field] = value
                }
            }
            for (key, field) in Self.durationKeys {
                if let value = object.configValue(Double.self, forKey: ConfigurationCodingKey(key), problems) {
                    limits[keyPath: field] = value
                }
            }
            return limits
        }
    }

    /// The problems of these limits, with paths under `path` (`limits.max_connections`).
    func problems(at path: String) -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (key, field) in Self.integerKeys where self[keyPath: field] <= 0 {
            problems.append(ConfigurationProblem(path: ConfigurationPath.join(path, key), message: "must be positive"))
        }
        for (key, field) in Self.durationKeys {
            let value = self[keyPath: field]
            if !(value > 0) {
                problems.append(
                    ConfigurationProblem(path: ConfigurationPath.join(path, key), message: "must be positive")
                )
            } else if value > Self.maxSeconds {
                problems.append(
                    ConfigurationProblem(
                        path: ConfigurationPath.join(path, key),
                        message: "must be at most \(Int(Self.maxSeconds)) seconds (one day)"
                    )
                )
            }
        }
        return problems
    }
}
