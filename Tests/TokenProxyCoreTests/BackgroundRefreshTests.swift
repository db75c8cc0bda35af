import Foundation
import Testing

@testable import TokenProxyCore

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
