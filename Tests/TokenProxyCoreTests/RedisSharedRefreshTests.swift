import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// A rotating refresh token shared through Redis: proxies that all need a new token at once
/// spend the refresh token once per round, and the chain is never lost.
@Suite struct RedisSharedRefreshTests {
    private func configuration(_ provider: FakeOAuthProvider, redis: RedisFixture) -> ProxyConfiguration {
        TestProxy.configuration(
            """
            {"token_store": {"redis": {"url": "\(redis.url)", "encryption_key": "k3y-for-the-redis-tests"}},
             "providers": {"app": {"grant": "refresh_token", "token_url": "\(provider.origin)/token", "client_id": "c",
               "refresh_token": "seed-1", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        )
    }

    @Test func concurrentProxiesRefreshOncePerRoundAndKeepTheChain() throws {
        let redis = try RedisFixture()
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        // A slow answer, so the others ask while one is refreshing.
        provider.refreshDelay = 0.2
        let configuration = self.configuration(provider, redis: redis)
        guard case .redis(let store) = configuration.tokenStore else {
            Issue.record("the configuration names no Redis store")
            return
        }
        // Four proxies, each with its own connections.
        let proxies = (0..<4).map { _ in
            CredentialRegistry(
                configuration: configuration,
                fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
                store: RedisTokenStore(store, logger: TestLogging.logger),
                logger: TestLogging.logger
            )
        }
        let sources = try proxies.map { try #require($0.entry("app")).source }
        var current: [AccessToken] = []
        for round in 1...4 {
            // Every proxy's token was refused (a 401): all refresh at once.
            for (source, token) in zip(sources, current) { source.invalidate(token) }
            let results = Mutex<[Int: Result<AccessToken, ProxyError>]>([:])
            DispatchQueue.concurrentPerform(iterations: sources.count) { index in
                let result = sources[index].waitForToken()
                results.withLockedValue { $0[index] = result }
            }
            // In the sources' order: each invalidates the token it holds.
            current = try (0..<sources.count).map { index in
                try #require(results.withLockedValue { $0[index] }).get()
            }
            #expect(Set(current.map(\.value)) == ["access-\(round)"])
            #expect(provider.count("refresh_token") == round)
        }
        let read = try RedisTokenStore(store, logger: TestLogging.logger).read()
        #expect(read.grants["app"]?.refreshToken == "refresh-4")
    }
}
