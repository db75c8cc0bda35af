import Foundation
import Testing

@testable import TokenProxyCore

/// refresh_token, password and token_exchange against the fake authorization server.
struct MachineGrantTests {
    private func fixture(_ auth: FakeAuthorizationServer, _ provider: String) throws -> ForwardingFixture {
        try ForwardingFixture(
            provider: """
                {"token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true, "client_id": "cli", \(provider)}
                """
        )
    }

    private func get(_ fixture: ForwardingFixture) throws -> TestClient.Response {
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    @Test func refreshTokensRotateAndAMissingOneKeepsTheOld() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(
            .init(
                status: 200,
                body: #"{"access_token": "a1", "token_type": "Bearer", "expires_in": 30, "refresh_token": "r2"}"#
            ),
            .init(status: 200, body: #"{"access_token": "a2", "token_type": "Bearer", "expires_in": 30}"#),
            .init(status: 200, body: #"{"access_token": "a3", "token_type": "Bearer", "expires_in": 30}"#)
        )
        // A lifetime inside the refresh skew: every request refreshes.
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "r1""#)
        for _ in 0..<3 {
            #expect(try self.get(fixture).status == 200)
        }
        #expect(auth.requests.map { $0.form["refresh_token"] } == ["r1", "r2", "r2"])
        #expect(auth.requests.allSatisfy { $0.form["grant_type"] == "refresh_token" })
        let sent = fixture.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(sent == ["Bearer a1", "Bearer a2", "Bearer a3"])
    }

    @Test func aSecretRepeatedInTheErrorDescriptionIsRedacted() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(
            .init(status: 400, body: #"{"error": "invalid_request", "error_description": "bad token rt-secret-77"}"#)
        )
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "rt-secret-77""#)
        let response = try self.get(fixture)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("bad token [redacted]"))
        #expect(!response.bodyText.contains("rt-secret-77"))
    }

    @Test func invalidGrantForgetsTheRefreshTokenAndAsksForANewOne() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(.init(status: 400, body: #"{"error": "invalid_grant", "error_description": "revoked"}"#))
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "r1""#)
        let first = try self.get(fixture)
        #expect(first.status == 401)
        #expect(first.header("X-Tokenproxy-Error") == "login_required")
        // A refresh_token provider gets a new seed from its configuration, not from a login.
        #expect(first.bodyText.contains("configure a new refresh_token for provider svc"))
        // The dead refresh token is never sent again.
        #expect(try self.get(fixture).status == 401)
        #expect(auth.requests.count == 1)
    }

    @Test func passwordGrantSendsTheUsersCredentials() throws {
        let auth = try FakeAuthorizationServer()
        setenv("TOKENPROXY_TEST_PASSWORD", "pa ss&word", 1)
        let fixture = try self.fixture(
            auth,
            #""grant": "password", "username": "alice", "password": {"env": "TOKENPROXY_TEST_PASSWORD"}, "scopes": ["s1"]"#
        )
        #expect(try self.get(fixture).status == 200)
        let form = try #require(auth.requests.first?.form)
        #expect(form["grant_type"] == "password")
        #expect(form["username"] == "alice")
        #expect(form["password"] == "pa ss&word")
        #expect(form["scope"] == "s1")
    }

    @Test func tokenExchangeRereadsTheSubjectTokenFile() throws {
        let auth = try FakeAuthorizationServer()
        auth.expiresIn = 30
        let directory = try ScriptDirectory()
        let file = directory.path("sa-token")
        try "projected-1\n".write(toFile: file, atomically: true, encoding: .utf8)
        let fixture = try self.fixture(
            auth,
            """
            "grant": "token_exchange", "subject_token": {"file": "\(file)"},
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "audience": "https://data.example", "client_auth": "none"
            """
        )
        #expect(try self.get(fixture).status == 200)
        try "projected-2\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try self.get(fixture).status == 200)
        let forms = auth.requests.map(\.form)
        #expect(forms.map { $0["subject_token"] } == ["projected-1", "projected-2"])
        #expect(forms.first?["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(forms.first?["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
        #expect(forms.first?["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(forms.first?["audience"] == "https://data.example")
        #expect(forms.first?["client_id"] == "cli")
        #expect(auth.requests.first?.authorization == nil)
    }
}

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
        auth.expiresIn = 30
        let fixture = try self.fixture(auth)
        #expect(try self.get(fixture).status == 200)
        #expect(try self.get(fixture).status == 200)
        #expect(auth.discoveryRequests == 1)
        #expect(auth.requests.count == 2)
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

struct BackgroundRefreshTests {
    @Test func theOldTokenIsServedWhileARefreshRuns() {
        var cache = TokenCacheStateMachine<Int>(skew: .seconds(10))
        let now = ContinuousClock.now
        _ = cache.request(1, now: now)
        let old = AccessToken(value: "old", expiresAt: now + .seconds(60))
        _ = cache.fetchSucceeded(old)
        let started = cache.beginBackgroundRefresh(of: old)
        let startedTwice = cache.beginBackgroundRefresh(of: old)
        #expect(started)
        #expect(!startedTwice)
        guard case .deliver(let served) = cache.request(2, now: now) else {
            Issue.record("the old token was not served during the refresh")
            return
        }
        #expect(served == old)
        guard case .wait = cache.request(3, now: now + .seconds(55)) else {
            Issue.record("a stale request should wait for the refresh")
            return
        }
        let new = AccessToken(value: "new", expiresAt: now + .seconds(120))
        let released = cache.fetchSucceeded(new)
        #expect(released == [3])
        #expect(cache.current(now: now) == new)
    }

    @Test func aFailedBackgroundRefreshKeepsTheOldToken() {
        var cache = TokenCacheStateMachine<Int>(skew: .zero)
        let now = ContinuousClock.now
        _ = cache.request(1, now: now)
        let old = AccessToken(value: "old", expiresAt: now + .seconds(60))
        _ = cache.fetchSucceeded(old)
        _ = cache.beginBackgroundRefresh(of: old)
        let released = cache.fetchFailed()
        #expect(released.isEmpty)
        #expect(cache.current(now: now) == old)
    }

    @Test func tokensAreRenewedAheadOfExpiryWithoutARequestWaiting() throws {
        let auth = try FakeAuthorizationServer()
        auth.expiresIn = 4
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "cli", "client_secret": "sec", "refresh_skew_seconds": 1}
                """
        )
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        // No client request is made, yet a second token arrives before the first goes stale.
        #expect(eventually { auth.requests.count >= 2 })
        // The renewed token is stored once its answer is read; requests meanwhile get the old
        // one, which is still valid, and none of them makes a fetch of its own.
        let renewedInUse = eventually {
            guard (try? client.get("/api/echo").status) == 200 else { return false }
            return fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer issued-2"
        }
        #expect(renewedInUse)
        #expect(auth.requests.count == 2)
    }
}
