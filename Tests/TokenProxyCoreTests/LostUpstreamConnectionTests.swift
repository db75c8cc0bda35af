import Foundation
import Logging
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyMetrics

/// A request sent on a kept-alive upstream connection that the upstream resets before
/// answering (`docs/reference/upstream.md`, "A reused connection that fails"): an idempotent one is
/// sent again once on a new connection; a POST, or a request whose connection was new, is
/// answered 502 `upstream_unreachable`.
struct LostUpstreamConnectionTests {
    /// A proxy with an engine of its own (so no connection of another test is in its cache)
    /// in front of a ``StaleConnectionUpstream``.
    private struct Setup {
        let upstream: StaleConnectionUpstream
        let proxy: TestProxy
        let client: TestClient

        init(
            logger: Logger = TestLogging.logger,
            metrics: ProxyMetrics = ProxyMetrics(),
            reset: @escaping @Sendable (_ connection: Int, _ request: Int) -> Bool
        ) throws {
            let upstream = try StaleConnectionUpstream(reset: reset)
            let configuration = TestProxy.configuration(
                """
                {"providers": {"svc": {"grant": "static", "token": "upstream-token-1"}},
                 "routes": [
                   {"name": "api", "path_prefix": "/api", "upstream": "http://127.0.0.1:\(upstream.port)/base",
                    "provider": "svc", "allow_insecure_upstream": true}
                 ]}
                """
            )
            let forwarder = CurlForwarder(
                configuration: configuration,
                engines: [try sleepyEngine("tp-lost")],
                metrics: metrics,
                logger: logger
            )
            self.upstream = upstream
            self.proxy = try TestProxy(configuration, forwarder: forwarder, logger: logger, metrics: metrics)
            self.client = try self.proxy.client()
        }

        /// Sends a request with a body on the client's connection and reads the answer.
        func send(_ method: String, _ target: String, body: String) throws -> TestClient.Response {
            try self.client.send(
                "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            return try self.client.readResponse()
        }

        /// Makes the upstream connection the next request will reuse.
        func warmUp() throws {
            let response = try self.client.get("/api/warm")
            #expect(response.status == 200)
            #expect(response.bodyText == "GET /base/warm on connection 1: ")
        }

        /// The requests the upstream saw after the warm-up: method, whether the connection was
        /// the warmed-up one, and whether it was answered.
        var seenAfterWarmUp: [String] {
            self.upstream.seen.dropFirst().map {
                "\($0.method) \($0.connection == 1 ? "reused" : "new") \($0.answered ? "answered" : "reset")"
            }
        }
    }

    /// The second request on every connection is reset.
    private static let resetSecond: @Sendable (Int, Int) -> Bool = { _, request in request == 2 }

    @Test func aPutOnAConnectionResetBeforeTheAnswerIsResentWithItsBodyOnANewOne() throws {
        let logs = CapturedLogs()
        let metrics = ProxyMetrics()
        let setup = try Setup(logger: logs.logger(), metrics: metrics, reset: Self.resetSecond)
        try setup.warmUp()

        let response = try setup.send("PUT", "/api/item", body: "small body")
        #expect(response.status == 200)
        #expect(response.bodyText.hasPrefix("PUT /base/item on connection "))
        #expect(response.bodyText.hasSuffix(": small body"))
        #expect(setup.seenAfterWarmUp == ["PUT reused reset", "PUT new answered"])
        // The same credential both times: the connection failed, not the token.
        #expect(setup.upstream.seen.map(\.authorization) == Array(repeating: "Bearer upstream-token-1", count: 3))

        let lines = try #require(eventually { AccessLines.of(logs, count: 2) })
        #expect(lines[0]["resent"] == nil)
        #expect(lines[1]["resent"] == "true")
        #expect(lines[1]["status"] == "200")
        #expect(logs.text.contains("resending on a new upstream connection"))
        let scrape = try setup.proxy.client().get("/_tokenproxy/metrics")
        let exposition = try PrometheusExposition(scrape.bodyText)
        #expect(exposition.value("tokenproxy_resends_total", ["route": "api"]) == 1)
        #expect(exposition.value("tokenproxy_upstream_errors_total", ["route": "api", "kind": "unreachable"]) == nil)
    }

    @Test func aDeleteWithABodyIsResentToo() throws {
        let setup = try Setup(reset: Self.resetSecond)
        try setup.warmUp()

        let response = try setup.send("DELETE", "/api/item/7", body: "reason=gone")
        #expect(response.status == 200)
        #expect(response.bodyText.hasSuffix(": reason=gone"))
        #expect(setup.seenAfterWarmUp == ["DELETE reused reset", "DELETE new answered"])
    }

    /// libcurl itself sends a request without a body again when its reused connection is
    /// reset after the head went out; the proxy must not add an attempt of its own.
    @Test func aGetOnAConnectionResetBeforeTheAnswerIsAnsweredFromANewOne() throws {
        let logs = CapturedLogs()
        let metrics = ProxyMetrics()
        let setup = try Setup(logger: logs.logger(), metrics: metrics, reset: Self.resetSecond)
        try setup.warmUp()

        let response = try setup.client.get("/api/item")
        #expect(response.status == 200)
        #expect(response.bodyText == "GET /base/item on connection 2: ")
        #expect(setup.seenAfterWarmUp == ["GET reused reset", "GET new answered"])
        // libcurl's own resend is told and counted like the proxy's.
        let lines = try #require(eventually { AccessLines.of(logs, count: 2) })
        #expect(lines[0]["resent"] == nil)
        #expect(lines[1]["resent"] == "true")
        let scrape = try setup.proxy.client().get("/_tokenproxy/metrics")
        let exposition = try PrometheusExposition(scrape.bodyText)
        #expect(exposition.value("tokenproxy_resends_total", ["route": "api"]) == 1)
    }

    /// libcurl sends a request again by itself when its connection from the cache closes
    /// before any answer; the upstream may have acted on the first copy, so a method that is
    /// not idempotent (RFC 9110 §9.2.2) is stopped before its second send and answered 502.
    @Test(arguments: [("POST", "not twice"), ("POST", ""), ("PATCH", "once")])
    func aRequestThatIsNotIdempotentIsNeverSentTwice(method: String, body: String) throws {
        let logs = CapturedLogs()
        let setup = try Setup(logger: logs.logger(), reset: Self.resetSecond)
        try setup.warmUp()

        let response = try setup.send(method, "/api/item", body: body)
        #expect(response.status == 502)
        #expect(response.header(ErrorResponse.errorHeaderName) == "upstream_unreachable")
        #expect(setup.seenAfterWarmUp == ["\(method) reused reset"])
        // A stopped second send is no resend.
        let lines = try #require(eventually { AccessLines.of(logs, count: 2) })
        #expect(lines[1]["resent"] == nil)
        // The next request is served on a new connection as usual.
        #expect(try setup.client.get("/api/item").status == 200)
    }

    @Test(arguments: ["", "body"])
    func aPostTheUpstreamDropsIsAnsweredOnceAndNeverSentAgain(body: String) throws {
        let setup = try Setup { _, _ in true }

        let response = try setup.send("POST", "/api/item", body: body)
        #expect(response.status == 502)
        #expect(response.header(ErrorResponse.errorHeaderName) == "upstream_unreachable")
        #expect(setup.upstream.seen.map(\.method) == ["POST"])
    }

    @Test func aFailureOnANewConnectionIsNotResent() throws {
        let setup = try Setup { _, _ in true }

        let response = try setup.send("PUT", "/api/item", body: "once")
        #expect(response.status == 502)
        #expect(response.header(ErrorResponse.errorHeaderName) == "upstream_unreachable")
        #expect(setup.upstream.seen.map(\.method) == ["PUT"])
    }

    @Test func aResentRequestIsNotResentAgain() throws {
        // After the warm-up, every request is reset, on the reused connection and new ones.
        let setup = try Setup { connection, request in connection > 1 || request > 1 }
        try setup.warmUp()

        let response = try setup.send("PUT", "/api/item", body: "twice at most")
        #expect(response.status == 502)
        #expect(response.header(ErrorResponse.errorHeaderName) == "upstream_unreachable")
        #expect(setup.seenAfterWarmUp == ["PUT reused reset", "PUT new reset"])
    }
}
