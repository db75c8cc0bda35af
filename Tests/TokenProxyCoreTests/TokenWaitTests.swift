import Foundation
import Testing

@testable import TokenProxyCredentials

/// The ends of a request's wait for its token (`docs/reference/security.md`, "Hostile timing"): the
/// request's own wait, the token request's whole life, the store's changes seen by a running
/// proxy, and what a missing secret says.
struct TokenWaitTests {
    private static func provider(_ auth: FakeAuthorizationServer, _ extra: String = "") -> String {
        """
        {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
         "client_id": "cli", "client_secret": "sec"\(extra)}
        """
    }

    private static func get(_ fixture: ForwardingFixture) throws -> TestClient.Response {
        let client = try fixture.client()
        try client.send("GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    @Test func aRequestWaitsForItsTokenOnlyItsTokenWaitWhileTheFetchGoesOn() throws {
        let auth = try FakeAuthorizationServer()
        // The endpoint answers after 3 s; requests wait 1 s at most, the fetch lives 10 s.
        auth.delay = 3
        let fixture = try ForwardingFixture(
            provider: Self.provider(auth),
            limits: #""token_wait_seconds": 1, "token_request_seconds": 10"#
        )
        let first = try Self.get(fixture)
        #expect(first.status == 502)
        #expect(first.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(first.bodyText.contains("token_wait_seconds"))
        // The one fetch went on and filled the cache: a later request gets its token.
        #expect(eventually { (try? Self.get(fixture).status) == 200 })
        #expect(auth.requests.count == 1)
    }

    @Test func aTokenRequestPastItsWholeLifeIsAbandonedAndTheNextOneIsNotHeldUp() throws {
        let auth = try FakeAuthorizationServer()
        auth.delay = 30
        let store = try TokenStoreFixture()
        let fixture = try ForwardingFixture(
            provider: Self.provider(auth),
            limits: #""token_wait_seconds": 5, "token_request_seconds": 1, "token_failure_backoff_seconds": 1"#,
            store: store.store()
        )
        let first = try Self.get(fixture)
        #expect(first.status == 502)
        #expect(first.header("X-Tokenproxy-Error") == "token_unavailable")
        // The abandoned request released the provider's lock in the store: once the
        // endpoint answers again, a request gets a token after the backoff.
        auth.delay = 0
        #expect(eventually { (try? Self.get(fixture).status) == 200 })
        let lock = try store.store().lockProvider("svc", deadline: .now + .seconds(5))
        lock.release()
    }

    /// A failed token request notes its error in the store; that write must not make the
    /// running proxy forget the failure and ask the refusing endpoint again at once.
    @Test func theBackoffHoldsAcrossTheFailuresOwnNoteInTheStore() throws {
        let auth = try FakeAuthorizationServer()
        for _ in 0..<20 {
            auth.enqueue(
                .init(status: 503, body: #"{"error": "temporarily_unavailable"}"#, headers: [("Retry-After", "20")])
            )
        }
        let store = try TokenStoreFixture()
        let fixture = try ForwardingFixture(
            provider: Self.provider(auth),
            limits: #""token_request_seconds": 5, "token_wait_seconds": 5"#,
            store: store.store()
        )
        #expect(try Self.get(fixture).status == 502)
        #expect(auth.requests.count == 1)
        #expect(try store.store().read().grants["svc"]?.lastError != nil)
        // Requests through the next three seconds, long enough for the proxy to see the
        // store's change: the endpoint asked for 20 s and is not asked again meanwhile.
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(3) {
            let response = try Self.get(fixture)
            #expect(response.status == 502)
            usleep(100_000)
        }
        #expect(auth.requests.count == 1)
    }

    @Test func aRunningProxyFollowsALogoutOfAnotherProcessWithinASecond() throws {
        let auth = try FakeAuthorizationServer()
        let store = try TokenStoreFixture()
        let fixture = try ForwardingFixture(provider: Self.provider(auth), store: store.store())
        #expect(try Self.get(fixture).status == 200)
        #expect(try Self.get(fixture).status == 200)
        #expect(auth.requests.count == 1)
        // What `tokenproxy logout svc` does to the store, from another instance.
        try store.store().update { $0.grants["svc"] = nil }
        #expect(eventually { (try? Self.get(fixture).status) == 200 && auth.requests.count == 2 })
        let sent = fixture.upstream.requests.compactMap { $0.headers.first("Authorization") }
        #expect(sent.last == "Bearer issued-2")
    }

    @Test func anUnreadableClientSecretNamesItsVariable() throws {
        let auth = try FakeAuthorizationServer()
        unsetenv("TOKENPROXY_TEST_NEVER_SET_SECRET")
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "cli", "client_secret": {"env": "TOKENPROXY_TEST_NEVER_SET_SECRET"}}
                """
        )
        let response = try Self.get(fixture)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("TOKENPROXY_TEST_NEVER_SET_SECRET"))
        #expect(auth.requests.isEmpty)
    }

    @Test func aMissingRefreshTokenSeedNamesItsFile() throws {
        let auth = try FakeAuthorizationServer()
        let directory = try ScriptDirectory()
        let seed = directory.path("missing-seed")
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "refresh_token", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "cli", "refresh_token": {"file": "\(seed)"}}
                """
        )
        let response = try Self.get(fixture)
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(response.bodyText.contains(seed))
        #expect(auth.requests.isEmpty)
        // Nothing was asked of the endpoint, so nothing is remembered: the seed is used as
        // soon as it exists.
        try "seed-1\n".write(toFile: seed, atomically: true, encoding: .utf8)
        chmod(seed, 0o600)
        #expect(try Self.get(fixture).status == 200)
        #expect(auth.requests.first?.form["refresh_token"] == "seed-1")
    }
}
