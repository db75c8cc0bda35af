import Foundation
import Testing

/// `readyz` (docs/reference/admin-endpoints.md "Probes") over real sockets, with the provider's token endpoint
/// at a fake authorization server whose requests are counted.
struct ReadinessTests {
    private struct Answer {
        var status: Int
        var document: [String: Any]

        var providers: [[String: Any]] { self.document["providers"] as? [[String: Any]] ?? [] }
    }

    private func readyz(_ fixture: ForwardingFixture) throws -> Answer {
        let response = try fixture.client().get("/_tokenproxy/readyz")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return Answer(status: response.status, document: try #require(object, "\(response.body)"))
    }

    private func clientCredentials(_ auth: FakeAuthorizationServer) -> String {
        """
        {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
         "client_id": "probe", "client_secret": "probe-s3cret"}
        """
    }

    @Test func notReadyWhileTheTokenEndpointFailsThenReadyWithoutFurtherTokenRequests() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(.init(status: 401, body: #"{"error": "invalid_client", "error_description": "unknown"}"#))
        let fixture = try ForwardingFixture(
            provider: self.clientCredentials(auth),
            limits: #""token_failure_backoff_seconds": 1"#
        )

        let failing = try self.readyz(fixture)
        #expect(failing.status == 503)
        #expect(failing.document["status"] as? String == "not_ready")
        let state = try #require(failing.providers.first)
        #expect(state["name"] as? String == "svc")
        #expect(state["state"] as? String == "unavailable")
        #expect(state["error"] as? String == "token_unavailable")
        #expect((state["message"] as? String)?.contains("invalid_client") == true)
        #expect(!"\(failing.document)".contains("probe-s3cret"))
        #expect(auth.requests.count == 1)

        // Probes during the backoff get the remembered failure, without a token request.
        #expect(try self.readyz(fixture).status == 503)
        #expect(auth.requests.count == 1)
        let ready = try #require(eventually { (try? self.readyz(fixture)).flatMap { $0.status == 200 ? $0 : nil } })
        #expect(ready.status == 200)
        #expect(ready.document["status"] as? String == "ready")
        #expect(ready.providers.first?["state"] as? String == "ready")
        #expect((ready.providers.first?["expires_in_seconds"] as? Int ?? 0) > 3000)
        #expect(auth.requests.count == 2)

        // Probes every few seconds and requests share the cached token: no further token request.
        for _ in 0..<25 {
            #expect(try self.readyz(fixture).status == 200)
        }
        #expect(try fixture.client().get("/api/x").status == 200)
        #expect(auth.requests.count == 2)
    }

    @Test func aProbeDuringARequestsTokenFetchSharesIt() throws {
        let auth = try FakeAuthorizationServer()
        auth.delay = 1
        let fixture = try ForwardingFixture(provider: self.clientCredentials(auth))
        let client = try fixture.client()
        try client.send("GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(eventually { auth.requests.count == 1 })
        #expect(try self.readyz(fixture).status == 200)
        #expect(try client.readResponse().status == 200)
        #expect(auth.requests.count == 1)
    }

    @Test func aTokenEndpointThatDoesNotAnswerInTimeIsReportedAfterABoundedWait() throws {
        let auth = try FakeAuthorizationServer()
        auth.delay = 8
        let fixture = try ForwardingFixture(provider: self.clientCredentials(auth))
        let answer = try self.readyz(fixture)
        #expect(answer.status == 503)
        #expect(answer.providers.first?["state"] as? String == "timeout")
    }

    @Test func anInteractiveProviderWithNothingStoredIsLoginRequired() throws {
        let auth = try FakeAuthorizationServer()
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "authorization_code", "authorization_url": "https://login.example/authorize",
                 "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true, "client_id": "app"}
                """
        )
        let answer = try self.readyz(fixture)
        #expect(answer.status == 503)
        let state = try #require(answer.providers.first)
        #expect(state["state"] as? String == "login_required")
        #expect(state["error"] as? String == "login_required")
        #expect((state["message"] as? String)?.contains("tokenproxy login svc") == true)
        #expect(auth.requests.isEmpty)
    }

    @Test func routesWithoutProvidersNeedNothing() throws {
        let proxy = try TestProxy(
            TestProxy.configuration(
                #"{"providers": {}, "routes": [{"path_prefix": "/open", "upstream": "http://127.0.0.1:1"}]}"#
            )
        )
        let response = try proxy.client().get("/_tokenproxy/readyz")
        #expect(response.status == 200)
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(object?["status"] as? String == "ready")
    }
}
