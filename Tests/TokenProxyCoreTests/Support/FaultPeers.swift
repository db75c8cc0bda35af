import Foundation

/// The peers of a proxy under test for liveness: a token endpoint and an upstream that
/// misbehave on demand (``FaultServer``), a well-behaved upstream for the routes not under
/// test, and the configuration that ties them together:
///
/// - `/api`: provider `svc` (`client_credentials` at ``tokenEndpoint``) to ``healthy``;
/// - `/up`: provider `fixed` (a static token) to ``upstream``;
/// - `/open`: no provider, to ``healthy``.
final class FaultPeers {
    let tokenEndpoint: FaultServer
    let upstream: FaultServer
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

/// One exchange as its client saw it: the status, the proxy's error code
/// (`X-Tokenproxy-Error`), and whether the body arrived whole by its framing.
struct ClientOutcome: Equatable, CustomStringConvertible {
    var status: Int
    var error: String?
    var complete: Bool

    /// A whole answer with this status and error code.
    static func answered(_ status: Int, _ error: String? = nil) -> ClientOutcome {
        ClientOutcome(status: status, error: error, complete: true)
    }

    var description: String { "\(self.status) \(self.error ?? "-")\(self.complete ? "" : " (broken body)")" }
}

extension TestClient {
    /// Reads one answer to a GET, its body through its framing; a connection that ends
    /// before the body does gives an incomplete outcome, a read past the socket timeout throws.
    func readOutcome() throws -> ClientOutcome {
        let head = try self.readHead()
        let framed = head.header("Content-Length") != nil || head.header("Transfer-Encoding") != nil
        let complete = try !framed || self.streamBody(of: head) { _ in }
        return ClientOutcome(status: head.status, error: head.header("X-Tokenproxy-Error"), complete: complete)
    }

    /// Sends `GET target` on `count` new connections to `port` before reading any answer (so
    /// all are in the proxy at once), runs `during` meanwhile, then reads every answer. Each
    /// read is bounded by `timeout` seconds.
    static func concurrentGets(
        port: UInt16,
        count: Int,
        target: String,
        timeout: Int = 15,
        during: () throws -> Void = {}
    ) throws -> [ClientOutcome] {
        var clients: [TestClient] = []
        for _ in 0..<count {
            let client = try TestClient(port: port, timeout: timeout)
            try client.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(client)
        }
        try during()
        return try clients.map { try $0.readOutcome() }
    }

    /// The outcome of one `GET target` on a new connection to `port`.
    static func outcome(port: UInt16, target: String, timeout: Int = 15) throws -> ClientOutcome {
        try Self.concurrentGets(port: port, count: 1, target: target, timeout: timeout)[0]
    }
}
