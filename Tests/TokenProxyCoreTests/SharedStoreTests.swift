import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// Providers sharing one token store file, as several proxies and `tokenproxy` commands on
/// one machine do. Each "process" here has its own ``FileTokenStore`` and so its own open
/// lock files: flock(2) excludes them from each other exactly as it excludes processes.
@Suite struct SharedStoreTests {
    private func configuration(_ provider: FakeOAuthProvider, store: TokenStoreFixture) -> ProxyConfiguration {
        TestProxy.configuration(
            """
            {"token_store": {"path": "\(store.storePath)"},
             "providers": {"app": {"grant": "refresh_token", "token_url": "\(provider.origin)/token", "client_id": "c",
               "refresh_token": "seed-1", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        )
    }

    /// A registry as one process would have it: its own store instance on the shared file.
    private func process(
        _ configuration: ProxyConfiguration,
        _ fixture: TokenStoreFixture,
        key: String? = nil
    ) -> CredentialRegistry {
        CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: fixture.store(key: key),
            logger: TestLogging.logger
        )
    }

    private func token(_ registry: CredentialRegistry) -> Result<AccessToken, ProxyError> {
        registry.entry("app")?.source.waitForToken() ?? .failure(ProxyError(.tokenUnavailable, "no provider"))
    }

    @Test func twoProcessesRefreshOnceAndKeepTheRotatedToken() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        // A slow answer, so the second process asks while the first is refreshing.
        provider.refreshDelay = 0.3
        let fixture = try TokenStoreFixture()
        let configuration = self.configuration(provider, store: fixture)
        let processes = (0..<4).map { _ in self.process(configuration, fixture) }
        let results = Mutex<[Result<AccessToken, ProxyError>]>([])
        let group = DispatchGroup()
        for registry in processes {
            group.enter()
            Thread.detachNewThread {
                let result = self.token(registry)
                results.withLockedValue { $0.append(result) }
                group.leave()
            }
        }
        group.wait()
        let tokens = try results.withLockedValue { $0 }.map { try $0.get().value }
        #expect(tokens == Array(repeating: "access-1", count: 4))
        // One refresh: the seed was spent once, and the others re-read the store.
        #expect(provider.count("refresh_token") == 1)
        let stored = try #require(try fixture.store().read().grants["app"])
        #expect(stored.refreshToken == "refresh-1")
        #expect(stored.accessToken == "access-1")
    }

    @Test func aRestartUsesTheStoredTokensAndTheRotatedRefreshToken() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        let fixture = try TokenStoreFixture()
        let configuration = self.configuration(provider, store: fixture)
        let first = try self.token(self.process(configuration, fixture)).get()
        #expect(first.value == "access-1")

        // "Restarted": no token request for the stored, still valid access token.
        let restarted = self.process(configuration, fixture)
        let again = try self.token(restarted).get()
        #expect(again.value == "access-1")
        #expect(provider.count("refresh_token") == 1)

        // A 401 refuses it: the refresh spends the rotated token, never the seed again
        // (the fake server revoked the seed when it rotated).
        try #require(restarted.entry("app")).source.invalidate(again)
        let renewed = try self.token(restarted).get()
        #expect(renewed.value == "access-2")
        #expect(provider.count("refresh_token") == 2)
        #expect(try fixture.store().read().grants["app"]?.refreshToken == "refresh-2")
    }

    @Test func aRefusedRefreshTokenIsForgottenAcrossRestarts() throws {
        let provider = try FakeOAuthProvider()
        // The seed is not accepted: invalid_grant.
        let fixture = try TokenStoreFixture()
        let configuration = self.configuration(provider, store: fixture)
        guard case .failure(let error) = self.token(self.process(configuration, fixture)) else {
            Issue.record("a refused refresh token produced a token")
            return
        }
        #expect(error.code == .loginRequired)
        let stored = try #require(try fixture.store().read().grants["app"])
        #expect(stored.needsLogin == true)
        #expect(stored.refreshToken == nil)

        // After a restart the dead seed is not sent again.
        guard case .failure(let again) = self.token(self.process(configuration, fixture)) else {
            Issue.record("the dead seed produced a token")
            return
        }
        #expect(again.code == .loginRequired)
        #expect(provider.count("refresh_token") == 1)
    }

    @Test func aRotatedRefreshTokenThatCannotBeWrittenIsKeptInMemory() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        let fixture = try TokenStoreFixture()
        let failing = Mutex(true)
        let store = fixture.store(faults: { step throws(TokenStoreError) in
            if step == .rename, failing.withLockedValue({ $0 }) {
                throw TokenStoreError(.io, "rename: No space left on device")
            }
        })
        let registry = CredentialRegistry(
            configuration: self.configuration(provider, store: fixture),
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: store,
            logger: TestLogging.logger
        )
        let first = try self.token(registry).get()
        #expect(first.value == "access-1")
        #expect(try fixture.store().read().grants["app"] == nil)

        // The next refresh spends the rotated token held in memory, not the spent seed.
        try #require(registry.entry("app")).source.invalidate(first)
        let second = try self.token(registry).get()
        #expect(second.value == "access-2")
        #expect(provider.count("refresh_token") == 2)

        // Once the disk takes writes again, the newest token reaches the store.
        failing.withLockedValue { $0 = false }
        try #require(registry.entry("app")).source.invalidate(second)
        #expect(try self.token(registry).get().value == "access-3")
        #expect(try fixture.store().read().grants["app"]?.refreshToken == "refresh-3")
    }

    @Test func aStoreThatCannotBeDecryptedSpendsNoRefreshToken() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        let fixture = try TokenStoreFixture()
        let configuration = self.configuration(provider, store: fixture)
        _ = try self.token(self.process(configuration, fixture, key: "key-one")).get()
        guard case .failure(let error) = self.token(self.process(configuration, fixture, key: "key-two")) else {
            Issue.record("a token was obtained without reading the store")
            return
        }
        #expect(error.code == .tokenUnavailable)
        #expect(error.message.contains("cannot be decrypted"))
        #expect(provider.count("refresh_token") == 1)
    }

    @Test func aNewSeedInTheConfigurationStartsANewChain() throws {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        provider.acceptRefreshToken("seed-2")
        let fixture = try TokenStoreFixture()
        _ = try self.token(self.process(self.configuration(provider, store: fixture), fixture)).get()
        var changed = self.configuration(provider, store: fixture)
        changed.providers["app"]?.refreshToken = .literal("seed-2")
        let token = try self.token(self.process(changed, fixture)).get()
        #expect(token.value == "access-2")
        #expect(provider.count("refresh_token") == 2)
    }

    @Test func aLoginInOneProcessReachesARunningProxyInAnother() throws {
        let fixture = try TokenStoreFixture()
        let login = try LoginFixture(store: fixture.store())
        let json =
            #"{"grant": "authorization_code", "issuer": "\#(login.provider.origin)", "client_id": "cli-1", "scopes": ["read"], "allow_insecure_endpoints": true}"#
        let proxy = try ForwardingFixture(provider: json, store: fixture.store())
        let client = try proxy.client()
        try client.send("GET /api/protected HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 401)

        // `tokenproxy login svc`, in effect: the forwarding fixture names its provider `svc`.
        var configuration = login.configuration
        configuration.name = "svc"
        let result = AuthorizationCodeLogin(
            provider: configuration,
            fetcher: login.fetcher,
            store: fixture.store(),
            limits: Limits(),
            logger: TestLogging.logger
        ).run(timeout: 30) { prompt in
            let url = prompt.url
            Thread.detachNewThread { _ = login.browse(url) }
        }
        _ = try result.get()

        try client.send("GET /api/protected HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(proxy.upstream.requests.last?.headers.first("Authorization") == "Bearer access-1")
    }
}
