import Foundation
import Logging
import Testing

/// Behaviour 6: a 401 from the upstream re-authorizes once and replays.
struct UnauthorizedReplayTests {
    @Test func aRevokedTokenIsReplacedAndTheRequestReplayed() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/protected").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let response = try fixture.get("/api/protected")
        #expect(response.status == 200)
        #expect(response.bodyText == "protected ok\n")
        #expect(fixture.auth.requests.count == 2)
        let sent = fixture.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(sent == ["Bearer issued-1", "Bearer issued-1", "Bearer issued-2"])
        // The new token is cached: no further token request.
        #expect(try fixture.get("/api/protected").status == 200)
        #expect(fixture.auth.requests.count == 2)
    }

    @Test func theAccessLinesTellATokenFetchAndAReplay() throws {
        let logs = CapturedLogs()
        let fixture = try OAuthFixture(logger: logs.logger())
        #expect(try fixture.get("/api/protected").status == 200)
        #expect(try fixture.get("/api/protected").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        #expect(try fixture.get("/api/protected").status == 200)
        let lines = try #require(eventually { AccessLines.of(logs, count: 3) })
        // The first request waited for the first token; the second used it as cached; the
        // third was refused, and replayed with a token fetched for it.
        #expect(lines[0]["token_refreshed"] == "true")
        #expect(lines[0]["replayed"] == nil)
        #expect(lines[1]["token_refreshed"] == nil)
        #expect(lines[1]["replayed"] == nil)
        #expect(lines[2]["token_refreshed"] == "true")
        #expect(lines[2]["replayed"] == "true")
        #expect(lines.map { $0["status"] } == ["200", "200", "200"])
    }

    @Test func aReplayCarriesTheSameBody() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/echo").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let response = try fixture.post("/api/protected", body: body)
        #expect(response.status == 200)
        let digests = fixture.forwarding.upstream.requests.suffix(2).map(\.bodySHA256)
        #expect(Set(digests).count == 1)
        #expect(response.header("X-Body-SHA256") == digests.first)
    }

    @Test func aBodyLargerThanTheReplayBufferIsNotReplayed() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/echo").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let response = try fixture.post("/api/protected", body: [UInt8](repeating: 7, count: 2 * 1024 * 1024))
        #expect(response.status == 401)
        #expect(response.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func aSecond401GoesToTheClient() throws {
        let fixture = try OAuthFixture()
        fixture.forwarding.upstream.refuseAllTokens()
        let response = try fixture.get("/api/protected")
        #expect(response.status == 401)
        #expect(response.bodyText == "revoked\n")
        #expect(fixture.auth.requests.count == 2)
        #expect(fixture.forwarding.upstream.requests.count == 2)
    }

    @Test func insufficientScopeNeverRefreshes() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/status/403").status == 403)
        #expect(try fixture.get("/api/status/403").status == 403)
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func routesWithRetryOffPassThe401() throws {
        let fixture = try OAuthFixture(route: #", "retry_on_401": false"#)
        fixture.forwarding.upstream.refuseAllTokens()
        #expect(try fixture.get("/api/protected").status == 401)
        #expect(fixture.auth.requests.count == 1)
    }

    /// `renew_on_status`: an API that answers a revoked token with 403 gets the same renewal
    /// and replay as a 401, once.
    @Test func aListedStatusRenewsTheTokenAndReplaysOnce() throws {
        let fixture = try OAuthFixture(route: #", "renew_on_status": [401, 403]"#)
        #expect(try fixture.get("/api/forbidden").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let response = try fixture.get("/api/forbidden")
        #expect(response.status == 200)
        #expect(fixture.auth.requests.count == 2)
        let sent = fixture.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(sent == ["Bearer issued-1", "Bearer issued-1", "Bearer issued-2"])
        // A second refusal goes to the client.
        fixture.forwarding.upstream.refuseAllTokens()
        #expect(try fixture.get("/api/forbidden").status == 403)
        #expect(fixture.auth.requests.count == 3)
    }

    /// Unlisted, a 403 goes to the client as it is, and a 401 is no longer renewed when the
    /// list leaves it out.
    @Test func anUnlistedStatusIsRelayed() throws {
        let fixture = try OAuthFixture()
        fixture.forwarding.upstream.refuseAllTokens()
        #expect(try fixture.get("/api/forbidden").status == 403)
        #expect(fixture.auth.requests.count == 1)
        let only403 = try OAuthFixture(route: #", "renew_on_status": [403]"#)
        only403.forwarding.upstream.refuseAllTokens()
        #expect(try only403.get("/api/protected").status == 401)
        #expect(only403.auth.requests.count == 1)
    }
}
