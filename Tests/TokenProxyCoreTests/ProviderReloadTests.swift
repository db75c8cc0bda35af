import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// A reload that replaces a provider while its token request runs (`CredentialRegistry`):
/// the requests waiting go to the new provider; a request whose tokens the new configuration
/// shares (a rotated client secret) is let finish, so the refresh token its answer rotated is
/// kept; the signal that abandons the others fires once.
@Suite struct ProviderReloadTests {
    private func configuration(_ provider: FakeOAuthProvider, _ fixture: TokenStoreFixture, secret: String)
        -> ProxyConfiguration
    {
        TestProxy.configuration(
            """
            {"token_store": {"path": "\(fixture.storePath)"},
             "providers": {"app": {"grant": "refresh_token", "token_url": "\(provider.origin)/token", "client_id": "c",
               "client_secret": "\(secret)", "refresh_token": "seed-1", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        )
    }

    @Test func aReloadThatKeepsTheTokensLetsTheRunningRefreshSaveItsRotatedToken() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        provider.refreshDelay = 1
        let fixture = try TokenStoreFixture()
        let registry = CredentialRegistry(
            configuration: self.configuration(provider, fixture, secret: "old-secret"),
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: fixture.store(key: nil),
            logger: TestLogging.logger
        )
        let old = try #require(registry.entry("app")?.source)
        let result = Mutex<Result<AccessToken, ProxyError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let token = old.waitForToken()
            result.withLockedValue { $0 = token }
            done.signal()
        }
        // The server has spent seed-1 and rotated it; its answer is still on the way.
        #expect(eventually { provider.grantTypes.count == 1 })
        registry.reload(self.configuration(provider, fixture, secret: "new-secret"))

        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect((try? result.withLockedValue { $0 }?.get())?.value == "access-1")
        #expect(provider.grantTypes == ["refresh_token"])
        // The chain goes on with the rotated token: the next renewal spends refresh-1.
        let current = try #require(registry.entry("app")?.source)
        let first = try current.waitForToken().get()
        current.invalidate(first)
        #expect((try? current.waitForToken().get())?.value == "access-2")
        #expect(provider.grantTypes == ["refresh_token", "refresh_token"])
    }

    @Test func theSignalRunsEachHandlerOnce() {
        let signal = CancellationSignal()
        let runs = Mutex<[String]>([])
        let kept = signal.onCancel { runs.withLockedValue { $0.append("kept") } }
        let removed = signal.onCancel { runs.withLockedValue { $0.append("removed") } }
        #expect(kept != nil)
        signal.remove(removed)
        #expect(!signal.isCancelled)
        signal.cancel()
        signal.cancel()
        #expect(signal.isCancelled)
        #expect(runs.withLockedValue { $0 } == ["kept"])
        // Registered after the signal fired: runs at once, and there is nothing to remove.
        let late = signal.onCancel { runs.withLockedValue { $0.append("late") } }
        #expect(late == nil)
        #expect(runs.withLockedValue { $0 } == ["kept", "late"])
    }
}
