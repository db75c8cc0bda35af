import Foundation
import Testing

@testable import TokenProxyCredentials

struct BackgroundRefreshTests {
    @Test func theOldTokenIsServedWhileARefreshRuns() {
        var cache = TokenCacheStateMachine<Int, String>(skew: .seconds(10))
        let now = ContinuousClock.now
        guard case .startFetch(let first) = cache.request(1, id: UInt64(1), now: now) else {
            Issue.record("no fetch started")
            return
        }
        let old = AccessToken(value: "old", expiresAt: now + .seconds(60))
        _ = cache.fetchSucceeded(old, fetch: first)
        let started = cache.beginBackgroundRefresh(of: old, now: now)
        let startedTwice = cache.beginBackgroundRefresh(of: old, now: now)
        #expect(started != nil)
        #expect(startedTwice == nil)
        guard case .deliver(let served) = cache.request(2, id: UInt64(2), now: now) else {
            Issue.record("the old token was not served during the refresh")
            return
        }
        #expect(served == old)
        guard case .wait = cache.request(3, id: UInt64(3), now: now + .seconds(55)) else {
            Issue.record("a stale request should wait for the refresh")
            return
        }
        let new = AccessToken(value: "new", expiresAt: now + .seconds(120))
        let released = cache.fetchSucceeded(new, fetch: started ?? 0)
        #expect(released == [3])
        #expect(cache.current(now: now) == new)
    }

    @Test func aFailedBackgroundRefreshKeepsTheOldToken() {
        var cache = TokenCacheStateMachine<Int, String>(skew: .zero)
        let now = ContinuousClock.now
        guard case .startFetch(let first) = cache.request(1, id: UInt64(1), now: now) else {
            Issue.record("no fetch started")
            return
        }
        let old = AccessToken(value: "old", expiresAt: now + .seconds(60))
        _ = cache.fetchSucceeded(old, fetch: first)
        let refresh = cache.beginBackgroundRefresh(of: old, now: now)
        let released = cache.fetchFailed("down", fetch: refresh ?? 0, now: now)
        #expect(released.isEmpty)
        #expect(cache.current(now: now) == old)
        guard case .deliver(let served) = cache.request(2, id: UInt64(2), now: now + .seconds(1)) else {
            Issue.record("the old token was not served after the failed refresh")
            return
        }
        #expect(served == old)
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
