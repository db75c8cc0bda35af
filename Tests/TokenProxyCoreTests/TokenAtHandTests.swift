import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

/// The synchronous answer a request takes before it asks with a completion: only what the
/// source would give at once, and nothing for a source that must be asked.
struct TokenAtHandTests {
    @Test func aStaticTokenIsAtHandUnlessItIsUnusableOrReadFromAFile() throws {
        #expect(StaticCredentialSource(name: "s", secret: .literal("abc")).tokenAtHand()?.value == "abc")
        // A value that is not a usable token fails each request through the completion.
        #expect(StaticCredentialSource(name: "s", secret: .literal("a b\r\n")).tokenAtHand() == nil)
        // A file is read per request, so that a rotated key is picked up.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tp-at-hand-\(UUID().uuidString)")
        try "from-file".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(StaticCredentialSource(name: "s", secret: .file(file.path)).tokenAtHand() == nil)
    }

    @Test func aCachedTokenIsAtHandWhileFreshAndNotOnceTheCacheIsRetired() {
        let cache = SharedTokenCache(provider: "svc", refreshSkewSeconds: 0, waitSeconds: 5, fetchSeconds: 5)
        #expect(cache.tokenAtHand() == nil)
        let started = Mutex<SharedTokenCache.Fetch?>(nil)
        cache.token(completion: { _ in }) { fetch in started.withLockedValue { $0 = fetch } }
        // Fetching: a request must wait, so nothing is at hand.
        #expect(cache.tokenAtHand() == nil)
        if let fetch = started.withLockedValue({ $0 }) {
            cache.complete(fetch, .success(AccessToken(value: "t", expiresAt: .now + .seconds(60))))
        }
        #expect(cache.tokenAtHand()?.value == "t")
        // Expired: a new fetch is needed.
        let stale = SharedTokenCache(provider: "svc", refreshSkewSeconds: 0, waitSeconds: 5, fetchSeconds: 5)
        let fetch = Mutex<SharedTokenCache.Fetch?>(nil)
        stale.token(completion: { _ in }) { started in fetch.withLockedValue { $0 = started } }
        if let started = fetch.withLockedValue({ $0 }) {
            stale.complete(started, .success(AccessToken(value: "old", expiresAt: .now - .seconds(1))))
        }
        #expect(stale.tokenAtHand() == nil)
        // A retired cache hands every caller to its successor.
        cache.retire { _, _ in }
        #expect(cache.tokenAtHand() == nil)
    }
}
