import Foundation
import Testing

@testable import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

private let routesJSON = """
    {
      "providers": {"svc": {"grant": "static", "token": {"env": "TOKENPROXY_TEST_UNUSED"}}},
      "routes": [
        {"name": "github", "path_prefix": "/gh", "upstream": "https://api.github.com"},
        {"path_prefix": "/svc", "upstream": "https://svc.example", "provider": "svc", "incoming_authorization": "reject"}
      ]
    }
    """

/// ``ProxyHandler`` on an in-memory connection with an in-process forwarder: the request
/// policy, the admin endpoints, routing and the proxy's own error answers.
struct ProxyHandlerTests {
    private static let routes = TestProxy.configuration(routesJSON)

    @Test func routedRequestsReachTheForwarderAndOthersGetNoRoute() throws {
        let forwarder = FakeForwarder()
        let connection = EmbeddedProxy.connection(Self.routes, forwarder: forwarder)
        connection.send("GET /ghost HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let missing = try #require(try connection.readResponse())
        #expect(missing.status == 404)
        #expect(missing.header("X-Tokenproxy-Error") == "no_route")
        connection.send("GET /gh/repos?page=2 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let routed = try #require(try connection.readResponse())
        #expect(routed.status == 200)
        #expect(routed.bodyText == "github")
        #expect(connection.run { forwarder.forwarded.map(\.route) } == ["github"])
        #expect(connection.run { forwarder.forwarded.map(\.target) } == ["/gh/repos?page=2"])
        #expect(!connection.outputEnded)
    }

    @Test(arguments: [
        (ProxyError.Code.upstreamUnreachable, 502, "upstream_unreachable"),
        (.upstreamTimeout, 504, "upstream_timeout"),
        (.tokenUnavailable, 502, "token_unavailable"),
    ])
    func aForwarderFailureIsAnsweredWithItsCode(code: ProxyError.Code, status: Int, name: String) throws {
        let connection = EmbeddedProxy.connection(Self.routes, forwarder: FakeForwarder(.error(code)))
        connection.send("GET /gh/repos HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == status)
        #expect(response.header("X-Tokenproxy-Error") == name)
        let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
        #expect(body?["error"] == name)
        #expect(body?["route"] == "github")
    }

    @Test func withoutAnEngineARouteIsAnswered502() throws {
        let connection = EmbeddedProxy.connection(Self.routes)
        connection.send("GET /gh/repos HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let routed = try #require(try connection.readResponse())
        #expect(routed.status == 502)
        let body = try JSONSerialization.jsonObject(with: Data(routed.body)) as? [String: String]
        #expect(body?["error"] == "upstream_unreachable")
        #expect(body?["route"] == "github")
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        let connection = EmbeddedProxy.connection()
        for _ in 0..<3 {
            connection.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try #require(try connection.readResponse())
            #expect(response.status == 200)
            #expect(response.header("Connection") == nil)
        }
        connection.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(try connection.readResponse()?.header("Connection") == "close")
        #expect(connection.outputEnded)
    }

    @Test func http10ClientsGetKeepAliveOnlyWhenAsking() throws {
        let connection = EmbeddedProxy.connection()
        connection.send("GET /_tokenproxy/healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try connection.readResponse()?.header("Connection") == "keep-alive")
        #expect(!connection.outputEnded)
        connection.send("GET /_tokenproxy/healthz HTTP/1.0\r\n\r\n")
        #expect(try connection.readResponse()?.header("Connection") == "close")
        #expect(connection.outputEnded)
    }

    @Test func pipelinedAdminRequestsThroughTheProxyHandler() throws {
        let connection = EmbeddedProxy.connection()
        let request = "GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
        connection.send(request + "GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n" + request)
        #expect(try connection.readResponse()?.status == 200)
        #expect(try connection.readResponse()?.status == 404)
        #expect(try connection.readResponse()?.status == 200)
    }

    @Test func aResponseBeforeTheBodyWithoutContinueClosesTheConnection() throws {
        let connection = EmbeddedProxy.connection(Self.routes)
        // The route answers without reading the body; no 100 is sent and the unread body
        // must not be parsed as a next request.
        connection.send("POST /gh/x HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 502)
        #expect(response.header("Connection") == "close")
        #expect(connection.outputEnded)
        connection.send("hello")
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func hostNotAllowedIs403AndTheConnectionStaysOpen() throws {
        let connection = EmbeddedProxy.connection()
        connection.send("GET /_tokenproxy/status HTTP/1.1\r\nHost: attacker.example\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 403)
        #expect(response.header("X-Tokenproxy-Error") == "host_not_allowed")
        // A 403 is not a framing problem: the connection stays open.
        connection.send("GET /_tokenproxy/status HTTP/1.1\r\nHost: localhost:1234\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
    }

    @Test func absoluteFormTargetsMustNameAnAllowedHost() throws {
        let connection = EmbeddedProxy.connection()
        connection.send("GET https://api.github.com/user HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 403)
        #expect(response.header("X-Tokenproxy-Error") == "host_not_allowed")
        connection.send("GET http://localhost/_tokenproxy/status HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
    }

    @Test(arguments: [
        ("Origin: https://evil.example", "cross_site_request"),
        ("Origin: null", "cross_site_request"),
        ("Sec-Fetch-Site: cross-site", "cross_site_request"),
    ])
    func browserForgeryIsRefused(header: String, code: String) throws {
        let forwarder = FakeForwarder()
        let connection = EmbeddedProxy.connection(Self.routes, forwarder: forwarder)
        connection.send("GET /gh/user HTTP/1.1\r\nHost: localhost\r\n\(header)\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 403)
        #expect(response.header("X-Tokenproxy-Error") == code)
        #expect(response.header("Access-Control-Allow-Origin") == nil)
        #expect(connection.run { forwarder.forwarded.isEmpty })
    }

    @Test func sameOriginBrowserRequestsPass() throws {
        let forwarder = FakeForwarder()
        let connection = EmbeddedProxy.connection(Self.routes, forwarder: forwarder)
        connection.send(
            "GET /gh/user HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:\(EmbeddedProxy.port)\r\n"
                + "Sec-Fetch-Site: same-origin\r\n\r\n"
        )
        #expect(try connection.readResponse()?.bodyText == "github")
        #expect(connection.run { forwarder.forwarded.map(\.route) } == ["github"])
    }

    @Test func requireHeaderIsEnforced() throws {
        setenv("TOKENPROXY_TEST_GATE", "s3cret-gate", 1)
        let forwarder = FakeForwarder()
        let connection = EmbeddedProxy.connection(
            TestProxy.configuration(
                #"{"require_header": {"name": "X-Tokenproxy", "value": {"env": "TOKENPROXY_TEST_GATE"}}, "providers": {}, "routes": [{"path_prefix": "/gh", "upstream": "https://api.github.com"}]}"#
            ),
            forwarder: forwarder
        )
        for header in [
            "", "X-Tokenproxy: wrong\r\n", "X-Tokenproxy: s3cret-gat\r\n",
            "X-Tokenproxy: s3cret-gate\r\nX-Tokenproxy: s3cret-gate\r\n",
        ] {
            connection.send("GET /gh/user HTTP/1.1\r\nHost: localhost\r\n\(header)\r\n")
            let response = try #require(try connection.readResponse())
            #expect(response.status == 403)
            #expect(response.header("X-Tokenproxy-Error") == "header_required")
            #expect(!response.bodyText.contains("s3cret"))
        }
        #expect(connection.run { forwarder.forwarded.isEmpty })
        connection.send("GET /gh/user HTTP/1.1\r\nHost: localhost\r\nX-Tokenproxy: s3cret-gate\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
        #expect(connection.run { forwarder.forwarded.count } == 1)
        // Probes stay reachable without the header.
        connection.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
    }

    @Test(arguments: ["CONNECT localhost:443 HTTP/1.1", "TRACE / HTTP/1.1"])
    func connectAndTraceAre405(requestLine: String) throws {
        let connection = EmbeddedProxy.connection()
        connection.send("\(requestLine)\r\nHost: localhost\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 405)
        #expect(response.header("X-Tokenproxy-Error") == "method_not_allowed")
        #expect(response.header("Allow") != nil)
    }

    @Test func incomingAuthorizationRejectIs400() throws {
        let forwarder = FakeForwarder()
        let connection = EmbeddedProxy.connection(Self.routes, forwarder: forwarder)
        connection.send("GET /svc/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer mine\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.status == 400)
        #expect(response.bodyText.contains("\"route\":\"/svc\""))
        #expect(connection.outputEnded)
        #expect(connection.run { forwarder.forwarded.isEmpty })
    }
}
