import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials

/// A token store whose next reads fail, as a store does while another process holds its
/// lock too long or its key file is briefly unreadable; everything else goes to `base`.
private final class FlakyReadStore: TokenStore {
    let base: any TokenStore
    private let failures = Mutex(0)

    init(_ base: any TokenStore) {
        self.base = base
    }

    /// Makes the next `count` reads fail.
    func failNextReads(_ count: Int) {
        self.failures.withLockedValue { $0 = count }
    }

    var location: String { self.base.location }

    func read() throws(TokenStoreError) -> TokenStoreContents {
        let fail = self.failures.withLockedValue { failures -> Bool in
            guard failures > 0 else { return false }
            failures -= 1
            return true
        }
        if fail {
            throw TokenStoreError(.lockTimeout, "the store's lock is held by another process")
        }
        return try self.base.read()
    }

    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        try self.base.update(body)
    }

    func lockProvider(_ name: String, deadline: ContinuousClock.Instant) throws(TokenStoreError) -> any TokenStoreLock {
        try self.base.lockProvider(name, deadline: deadline)
    }

    func revision() -> String? {
        self.base.revision()
    }
}

/// A running proxy's look at the token store for changes made by other processes
/// (`docs/reference/token-store.md`).
struct StoreWatchTests {
    /// A `logout` in another process reaches the running proxy even when the proxy's first
    /// read of the changed store fails: the change stays unseen until a read succeeds.
    @Test func aChangeWhoseFirstReadFailsIsSeenByALaterLook() throws {
        let auth = try FakeAuthorizationServer()
        let storeFixture = try TokenStoreFixture()
        let store = FlakyReadStore(storeFixture.store())
        let proxy = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)",
                 "allow_insecure_endpoints": true, "client_id": "c", "client_secret": "s"}
                """,
            store: store
        )
        let sentTokens = { proxy.upstream.requests.map { $0.headers.first("Authorization") } }
        let get = { () throws -> Int in
            let client = try proxy.client()
            try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return try client.readResponse().status
        }
        #expect(try get() == 200)
        #expect(sentTokens().last == "Bearer issued-1")

        // `tokenproxy logout svc` in another process, while this one's next read fails.
        store.failNextReads(1)
        try storeFixture.store().update { $0.grants["svc"] = nil }

        let renewed = eventually {
            (try? get()) == 200 && sentTokens().last == "Bearer issued-2"
        }
        #expect(renewed)
    }
}
