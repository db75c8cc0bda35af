import Foundation
import Testing

/// Every answer the proxy makes itself names its error code in the access line, and a 502 or
/// 504 its reason (`docs/reference/log-fields.md`).
struct AccessLineErrorTests {
    /// The access line of the request for `path`, once written.
    private func accessLine(for path: String, in logs: CapturedLogs) -> [String: String]? {
        eventually { logs.events.first { $0.message == "request" && $0.metadata["path"] == path }?.metadata }
    }

    @Test func aRequestNoRouteMatchesNamesItsCode() throws {
        let logs = CapturedLogs()
        let fixture = try ForwardingFixture(logger: logs.logger())
        let client = try fixture.client()
        try client.send("GET /nowhere HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 404)
        let line = try #require(self.accessLine(for: "/nowhere", in: logs))
        #expect(line["status"] == "404")
        #expect(line["error"] == "no_route")
        #expect(line["reason"] == nil)
    }

    @Test func anUnreachableUpstreamNamesItsCodeAndReason() throws {
        let logs = CapturedLogs()
        let fixture = try ForwardingFixture(logger: logs.logger())
        let client = try fixture.client()
        try client.send("GET /dead/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 502)
        let line = try #require(self.accessLine(for: "/dead/x", in: logs))
        #expect(line["status"] == "502")
        #expect(line["error"] == "upstream_unreachable")
        let reason = try #require(line["reason"])
        #expect(!reason.isEmpty)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(body["message"] as? String == reason)
    }

    /// Needs `CurlForwarder` to answer a token failure through ``HTTPExchange/respond(to:)``
    /// (or `HTTPExchange.respond(_:)` to note ``HTTPResponse/error`` itself).
    @Test
    func aRefusingTokenEndpointNamesItsCodeAndReason() throws {
        let logs = CapturedLogs()
        let auth = try FakeAuthorizationServer()
        auth.enqueue(.init(status: 401, body: #"{"error":"invalid_client","error_description":"wrong\nsecret"}"#))
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "c", "client_secret": "s"}
                """,
            logger: logs.logger()
        )
        let client = try fixture.client()
        try client.send("GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 502)
        let line = try #require(self.accessLine(for: "/api/x", in: logs))
        #expect(line["status"] == "502")
        #expect(line["error"] == "token_unavailable")
        #expect(line["reason"]?.contains("invalid_client") == true)
    }

    @Test func aSuccessCarriesNoErrorField() throws {
        let logs = CapturedLogs()
        let fixture = try ForwardingFixture(logger: logs.logger())
        let client = try fixture.client()
        try client.send("GET /open/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        let line = try #require(self.accessLine(for: "/open/x", in: logs))
        #expect(line["error"] == nil && line["reason"] == nil)
    }
}
