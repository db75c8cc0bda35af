import Foundation
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyMetrics

/// A proxy in this process in front of ``FaultPeers``, with its metrics.
private final class FaultFixture {
    let peers: FaultPeers
    let forwarder: CurlForwarder
    let proxy: TestProxy

    init(
        tokenEndpoint: FaultServer.Fault = .token(FaultPeers.token),
        upstream: FaultServer.Fault = .ok,
        limits: String = FaultPeers.quickLimits()
    ) throws {
        self.peers = try FaultPeers(tokenEndpoint: tokenEndpoint, upstream: upstream)
        let configuration = TestProxy.configuration(self.peers.configuration(limits: limits))
        let metrics = ProxyMetrics()
        self.forwarder = CurlForwarder(
            configuration: configuration,
            engines: [ForwardingFixture.engine],
            metrics: metrics,
            logger: TestLogging.logger
        )
        self.proxy = try TestProxy(configuration, forwarder: self.forwarder, metrics: metrics)
    }

    /// `count` GETs of `target` at once; `during` runs while they are all in the proxy.
    func gets(_ count: Int, _ target: String, during: () throws -> Void = {}) throws -> [ClientOutcome] {
        try TestClient.concurrentGets(port: self.proxy.port, count: count, target: target, during: during)
    }

    func get(_ target: String) throws -> ClientOutcome {
        try TestClient.outcome(port: self.proxy.port, target: target)
    }

    /// `tokenproxy_token_requests_total` of provider `svc` with `result`: token requests
    /// that ended (their retries of transient failures included).
    func tokenRequests(_ result: String) throws -> Int {
        let response = try self.proxy.client().get("/_tokenproxy/metrics")
        let metrics = try PrometheusExposition(String(decoding: response.body, as: UTF8.self))
        return Int(metrics.value("tokenproxy_token_requests_total", ["provider": "svc", "result": result]) ?? 0)
    }
}

/// A fault of a peer and what a client of the proxy sees because of it.
struct PeerFault: Sendable, CustomTestStringConvertible {
    /// How the test output names it.
    var name: String
    /// What the fault server does.
    var fault: FaultServer.Fault
    /// What every client gets; nil when some get 200 and the others 502 (a flapping peer).
    var expected: ClientOutcome?
    /// Whether one attempt at the peer lasts until a deadline, so that a token request makes
    /// one attempt only (other faults fail at once and are retried within the token request).
    var stalls: Bool

    /// The name, for the test output.
    var testDescription: String { self.name }

    /// Token endpoint faults: each leaves the requests waiting for it without a token.
    static let tokenEndpoint: [PeerFault] = [
        ("refuse", .refuse, false),
        ("hang before head", .hangBeforeHead, true),
        ("head then silence", .headThenSilence, true),
        ("slow drip", .slowDrip(bytesPerSecond: 10), true),
        ("reset mid-body", .resetMidBody, false),
        ("garbage", .garbage, false),
    ].map { (name: String, fault: FaultServer.Fault, stalls: Bool) in
        PeerFault(name: name, fault: fault, expected: .answered(502, "token_unavailable"), stalls: stalls)
    }

    /// Upstream faults, with what the client sees.
    static let upstream: [PeerFault] = [
        .init(name: "refuse", fault: .refuse, expected: .answered(502, "upstream_unreachable"), stalls: false),
        .init(
            name: "hang before head",
            fault: .hangBeforeHead,
            expected: .answered(504, "upstream_timeout"),
            stalls: true
        ),
        .init(
            name: "head then silence",
            fault: .headThenSilence,
            expected: .init(status: 200, complete: false),
            stalls: true
        ),
        .init(
            name: "drip then stop",
            fault: .slowDrip(bytesPerSecond: 20, stopAfter: 10),
            expected: .init(status: 200, complete: false),
            stalls: true
        ),
        .init(
            name: "reset mid-body",
            fault: .resetMidBody,
            expected: .init(status: 200, complete: false),
            stalls: false
        ),
        .init(name: "garbage", fault: .garbage, expected: .answered(502, "upstream_unreachable"), stalls: false),
        .init(name: "flapping", fault: .flapping(good: .ok, bad: .refuse), expected: nil, stalls: false),
    ]

    /// A fault called `name` for the test output.
    init(name: String, fault: FaultServer.Fault, expected: ClientOutcome? = nil, stalls: Bool) {
        self.name = name
        self.fault = fault
        self.expected = expected
        self.stalls = stalls
    }
}

/// A peer's fault never becomes the proxy's (`docs/reference/security.md`, "A hostile or broken token
/// endpoint", "A hostile or broken upstream"): whatever a token endpoint or an upstream does,
/// every request is answered within the limits, with the answer that names the fault; a
/// token endpoint's fault costs one token request however many requests wait, and none while
/// its failure is remembered; and the proxy heals by itself once the peer does. Each fault
/// meets one request, then 200 at once, while an unrelated route keeps answering.
struct LivenessFaultTests {
    /// Every waiter gets 502 `token_unavailable` by `token_wait_seconds`; the one token
    /// request ends by `token_request_seconds`; requests during the backoff get the failure
    /// without asking; once the endpoint answers again, so does the proxy.
    @Test(arguments: PeerFault.tokenEndpoint, [1, 200])
    func aTokenEndpointFaultCostsOneTokenRequestAndHeals(fault: PeerFault, clients: Int) throws {
        let fixture = try FaultFixture(tokenEndpoint: fault.fault)
        let endpoint = fixture.peers.tokenEndpoint
        var open: ClientOutcome?
        let started = ContinuousClock.now
        let answers = try fixture.gets(clients, "/api/echo") { open = try fixture.get("/open/echo") }
        let burst = ContinuousClock.now - started
        #expect(open == .answered(200))
        #expect(answers.filter { $0 != fault.expected }.isEmpty, "\(answers.filter { $0 != fault.expected })")

        // One token request for every waiter, counted when it ends; a stalled attempt is the
        // only one, others are retried within it. A burst that outlasts the token request
        // and the 1 s backoff after it (a loaded machine sends 200 clients slowly) may meet
        // the next token request, as it should.
        let allowed = burst < .seconds(3) ? 1 : 2
        if fault.stalls {
            // Each stalled attempt is a token request of its own, counted when it gives up.
            #expect(eventually { (try? fixture.tokenRequests("error")) == endpoint.connections })
            #expect((1...allowed).contains(endpoint.connections), "\(endpoint.connections) attempts")
        } else {
            #expect(eventually { (1...allowed).contains((try? fixture.tokenRequests("error")) ?? 0) })
        }
        let requested = try fixture.tokenRequests("error")
        if !fault.stalls {
            #expect((requested...20 * requested).contains(endpoint.connections), "\(endpoint.connections) attempts")
        }

        // While the failure is remembered, requests get it without a new token request.
        let asked = endpoint.connections
        let remembered = try fixture.gets(clients, "/api/echo")
        #expect(remembered.filter { $0 != fault.expected }.isEmpty, "\(remembered.filter { $0 != fault.expected })")
        #expect(endpoint.connections == asked)
        #expect(try fixture.tokenRequests("error") == requested)

        // Once the endpoint heals and the backoff has passed, tokens flow again.
        endpoint.fault = .token("healed")
        #expect(eventually { (try? fixture.get("/api/echo")) == .answered(200) })
        let healed = try fixture.gets(clients, "/api/echo")
        #expect(healed.filter { $0 != .answered(200) }.isEmpty, "\(healed.filter { $0 != .answered(200) })")
        #expect(try fixture.tokenRequests("success") == 1)
        #expect(fixture.peers.healthy.requests.last?.headers.first("Authorization") == "Bearer healed")
    }

    /// A token endpoint that fails every other connection costs one token request: its
    /// failures are retried within it, and every waiter gets the token.
    @Test(arguments: [1, 200])
    func aFlappingTokenEndpointIsRetriedWithinOneTokenRequest(clients: Int) throws {
        let fixture = try FaultFixture(
            tokenEndpoint: .flapping(good: .token("flapped"), bad: .refuse),
            limits: FaultPeers.quickLimits(tokenWait: 10)
        )
        let answers = try fixture.gets(clients, "/api/echo")
        #expect(answers.filter { $0 != .answered(200) }.isEmpty, "\(answers.filter { $0 != .answered(200) })")
        #expect(try fixture.tokenRequests("success") == 1)
        #expect(try fixture.tokenRequests("error") == 0)
        #expect(fixture.peers.tokenEndpoint.connections == 2)
    }

    /// A head that never comes is 504 `upstream_timeout` by the first-byte timeout; bytes that
    /// are not HTTP, or no answer at all, are 502 `upstream_unreachable`; a body that stops or
    /// breaks after the head breaks off at the client, by `upstream_idle_seconds` at the
    /// latest, never looking complete. Once the upstream answers again, so does the proxy.
    @Test(arguments: PeerFault.upstream, [1, 200])
    func anUpstreamFaultIsAnsweredAndHeals(fault: PeerFault, clients: Int) throws {
        let fixture = try FaultFixture(upstream: fault.fault)
        var open: ClientOutcome?
        let answers = try fixture.gets(clients, "/up/x") { open = try fixture.get("/open/echo") }
        #expect(open == .answered(200))
        if let expected = fault.expected {
            #expect(answers.filter { $0 != expected }.isEmpty, "\(answers.filter { $0 != expected })")
        } else {
            let served = answers.filter { $0 == .answered(200) }.count
            let refused = answers.filter { $0 == .answered(502, "upstream_unreachable") }.count
            #expect(served + refused == clients, "\(answers)")
            #expect(clients == 1 || (served >= 1 && refused >= 1), "\(answers)")
        }

        fixture.peers.upstream.fault = .ok
        #expect(eventually { (try? fixture.get("/up/x")) == .answered(200) })
        let healed = try fixture.gets(clients, "/up/x")
        #expect(healed.filter { $0 != .answered(200) }.isEmpty, "\(healed.filter { $0 != .answered(200) })")
    }

    /// A request with a body is sent once its last byte went to libcurl (which asks for no
    /// more once it has the announced length), so an upstream that reads it and never
    /// answers gets the same first-byte timeout as one sent without a body: 504. So does one
    /// whose announced body is empty, which libcurl never asks for.
    @Test(arguments: [("POST", "hello"), ("PUT", "hello"), ("POST", "")])
    func aRequestWithABodyToAnUpstreamThatNeverAnswersIs504(method: String, body: String) throws {
        let fixture = try FaultFixture(upstream: .hangBeforeHead)
        let client = try fixture.proxy.client()
        try client.send(
            "\(method) /up/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        let response = try client.readResponse()
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
        #expect(fixture.peers.upstream.requests == 1)
    }

    /// The fault server itself leaves nothing behind: stopping it ends the connections it
    /// holds and every thread serving them, so hundreds of stalled connections per test do
    /// not pile up in the test process.
    @Test func aStoppedFaultServerHoldsNoThreadOrConnection() throws {
        let server = try FaultServer(.hangBeforeHead)
        let clients = try (0..<20).map { _ in try TestClient(port: server.port, timeout: 5) }
        for client in clients { try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n") }
        #expect(eventually { server.requests == 20 })
        #expect(server.threads == 21)

        server.stop()
        #expect(server.threads == 0)
        #expect(try clients.allSatisfy { try $0.isClosedByServer() })
        #expect(throws: TestClient.Failure.self) { try TestClient(port: server.port) }
    }

    /// A failed token request writes its error to the token store, and within a second the
    /// store watcher reports the change to the provider's source, as done here at once. The
    /// remembered failure must outlive that: only a change that can let a token request
    /// succeed (a login, a logout, a token from another process) should end the backoff.
    @Test func aRememberedFailureOutlivesItsOwnStoreWrite() throws {
        let fixture = try FaultFixture(
            tokenEndpoint: .answer(
                status: 503,
                headers: [("Retry-After", "30"), ("Content-Type", "application/json")],
                body: #"{"error": "temporarily_unavailable"}"#
            ),
            limits: FaultPeers.quickLimits(backoff: 30)
        )
        let endpoint = fixture.peers.tokenEndpoint
        #expect(try fixture.get("/api/echo") == .answered(502, "token_unavailable"))
        #expect(endpoint.requests == 1)

        let registry = try #require(fixture.forwarder.credentialRegistry)
        let source = try #require(registry.entry("svc")?.source)
        source.storeChanged(try registry.store.read())

        // Retry-After asked for 30 seconds: the failure is still remembered.
        #expect(try fixture.get("/api/echo") == .answered(502, "token_unavailable"))
        #expect(endpoint.requests == 1)
    }
}
