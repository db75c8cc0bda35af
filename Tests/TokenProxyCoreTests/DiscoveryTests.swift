import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxyUpstream

struct DiscoveryTests {
    private func fixture(_ auth: FakeAuthorizationServer) throws -> ForwardingFixture {
        try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "issuer": "\(auth.origin)", "allow_insecure_endpoints": true,
                 "client_id": "cli", "client_secret": "sec"}
                """
        )
    }

    private func get(_ fixture: ForwardingFixture) throws -> TestClient.Response {
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    @Test func theTokenEndpointIsDiscoveredFromTheIssuerOnce() throws {
        let auth = try FakeAuthorizationServer()
        // A 1 s token is used for half a second, then renewed: a second token request.
        auth.expiresIn = 1
        let fixture = try self.fixture(auth)
        #expect(try self.get(fixture).status == 200)
        #expect(eventually { (try? self.get(fixture).status) == 200 && auth.requests.count == 2 })
        #expect(auth.discoveryRequests == 1)
    }

    @Test func aDocumentForAnotherIssuerIsRefused() throws {
        let auth = try FakeAuthorizationServer()
        auth.claimedIssuer = "https://evil.example"
        let fixture = try self.fixture(auth)
        let response = try self.get(fixture)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("issuer"))
        // The RFC 8414 location was tried too, but no token was ever requested.
        #expect(auth.requests.allSatisfy { $0.form["grant_type"] == nil })
    }

    @Test func metadataURLsFollowRFC8414ForIssuersWithAPath() {
        let cache = DiscoveryCache(
            issuer: "https://auth.example/tenant1/",
            allowPlainHTTP: false,
            caFile: nil,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine)
        )
        #expect(
            cache.documentURLs == [
                "https://auth.example/tenant1/.well-known/openid-configuration",
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
            ]
        )
    }
}
