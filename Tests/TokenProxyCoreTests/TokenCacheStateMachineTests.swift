import Foundation
import Synchronization
import Testing

@testable import TokenProxyCore

struct TokenCacheStateMachineTests {
    @Test func oneFetchServesEveryWaiter() {
        var cache = TokenCacheStateMachine<Int>(skew: .seconds(60))
        let now = ContinuousClock.now
        guard case .startFetch = cache.request(1, now: now), case .wait = cache.request(2, now: now),
            case .wait = cache.request(3, now: now)
        else {
            Issue.record("expected one fetch and two waits")
            return
        }
        let token = AccessToken(value: "t", expiresAt: now + .seconds(3600))
        #expect(cache.fetchSucceeded(token) == [1, 2, 3])
        guard case .deliver(let cached) = cache.request(4, now: now) else {
            Issue.record("a fresh token was not delivered")
            return
        }
        #expect(cached == token)
    }

    @Test func tokensAreRefreshedSkewBeforeExpiry() {
        var cache = TokenCacheStateMachine<Int>(skew: .seconds(60))
        let now = ContinuousClock.now
        _ = cache.request(1, now: now)
        _ = cache.fetchSucceeded(AccessToken(value: "t", expiresAt: now + .seconds(90)))
        guard case .deliver = cache.request(2, now: now + .seconds(29)) else {
            Issue.record("token should still be fresh")
            return
        }
        guard case .startFetch = cache.request(3, now: now + .seconds(31)) else {
            Issue.record("token inside the skew should be refreshed")
            return
        }
    }

    @Test func failureReleasesWaitersAndTheNextRequestFetchesAgain() {
        var cache = TokenCacheStateMachine<Int>(skew: .zero)
        let now = ContinuousClock.now
        _ = cache.request(1, now: now)
        _ = cache.request(2, now: now)
        #expect(cache.fetchFailed() == [1, 2])
        guard case .startFetch = cache.request(3, now: now) else {
            Issue.record("expected a new fetch")
            return
        }
    }

    @Test func invalidateOnlyDropsTheTokenItNames() {
        var cache = TokenCacheStateMachine<Int>(skew: .zero)
        let now = ContinuousClock.now
        _ = cache.request(1, now: now)
        let current = AccessToken(value: "new")
        _ = cache.fetchSucceeded(current)
        cache.invalidate(AccessToken(value: "old"))
        #expect(cache.current(now: now) == current)
        cache.invalidate(current)
        #expect(cache.current(now: now) == nil)
    }
}
