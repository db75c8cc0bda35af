import Foundation

/// The peers of a proxy under test for liveness: a token endpoint and an upstream that
/// misbehave on demand (``FaultServer``), a well-behaved upstream for the routes not under
/// test, and the configuration that ties them together:
///
/// - `/api`: provider `svc` (`client_credentials` at ``tokenEndpoint``) to ``healthy``;
/// - `/up`: provider `fixed` (a static token) to ``upstream``;
/// - `/open`: no provider, to ``healthy``.
final class FaultPeers {
    /// The token endpoint of provider `svc`.
    let tokenEndpoint: FaultServer
    /// The upstream of route `up`.
    let upstream: FaultServer
    /// The upstream of routes `api` and `open`, never at fault.
    let healthy: FakeUpstream

    /// Limits short enough that every fault ends within a few seconds: a request waits
    /// `tokenWait` seconds for its token, a failed token request is remembered for at most
    /// `backoff` seconds, and every other deadline is one or two seconds.
    static func quickLimits(tokenWait: Int = 1, backoff: Int = 1) -> String {
        """
        "token_wait_seconds": \(tokenWait), "token_request_seconds": 2, "token_failure_backoff_seconds": \(backoff),
        "upstream_connect_timeout_seconds": 1, "upstream_first_byte_timeout_seconds": 1, "upstream_idle_seconds": 1
        """
    }

    /// Limits long enough that no deadline ends an exchange while a test runs: only the
    /// client's going away can.
    static let patientLimits = """
        "token_wait_seconds": 60, "token_request_seconds": 60, "token_failure_backoff_seconds": 60,
        "upstream_connect_timeout_seconds": 60, "upstream_first_byte_timeout_seconds": 60, "upstream_idle_seconds": 60
        """

    /// The token the healthy token endpoint issues.
    static let token = "fault-peers-token"

    /// Peers that start healthy unless told otherwise.
    init(tokenEndpoint: FaultServer.Fault = .token(FaultPeers.token), upstream: FaultServer.Fault = .ok) throws {
        self.tokenEndpoint = try FaultServer(tokenEndpoint)
        self.upstream = try FaultServer(upstream)
        self.healthy = try FakeUpstream()
    }

    /// The configuration JSON, with `limits` (the inside of the object) and more top-level
    /// members in `extra` (each followed by a comma).
    func configuration(limits: String, extra: String = "") -> String {
        let healthy = "http://127.0.0.1:\(self.healthy.port)/base"
        return """
            {\(extra) "limits": {\(limits)},
             "providers": {
               "svc": {"grant": "client_credentials", "token_url": "\(self.tokenEndpoint.url("/token"))",
                       "allow_insecure_endpoints": true, "client_id": "faults", "client_secret": "f-s3cret"},
               "fixed": {"grant": "static", "token": "fixed-token"}},
             "routes": [
               {"name": "api", "path_prefix": "/api", "upstream": "\(healthy)", "provider": "svc",
                "allow_insecure_upstream": true},
               {"name": "up", "path_prefix": "/up", "upstream": "\(self.upstream.url("/base"))", "provider": "fixed",
                "allow_insecure_upstream": true},
               {"name": "open", "path_prefix": "/open", "upstream": "\(healthy)"}
             ]}
            """
    }
}
