import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// A `password` provider sends the user's password as seldom as it can (RFC 9700 §2.4,
/// RFC 6749 §4.3): a token the upstream refused is renewed with the refresh token of the
/// last answer, and the password goes out again only when that refresh token is refused or
/// there is none (`docs/reference/configuration.md`, "Providers").
@Suite struct PasswordGrantRenewalTests {
    private func source(_ provider: FakeOAuthProvider, _ fixture: TokenStoreFixture) throws -> any CredentialSource {
        let configuration = TestProxy.configuration(
            """
            {"token_store": {"path": "\(fixture.storePath)"},
             "providers": {"app": {"grant": "password", "token_url": "\(provider.origin)/token", "client_id": "c",
               "username": "alice", "password": "wonderland", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        )
        let registry = CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: fixture.store(key: nil),
            logger: TestLogging.logger
        )
        return try #require(registry.entry("app")?.source)
    }

    @Test func aRenewalSpendsTheRefreshTokenAndThePasswordGoesOutOnlyWhenItIsRefused() throws {
        let provider = try FakeOAuthProvider()
        let fixture = try TokenStoreFixture()
        let source = try self.source(provider, fixture)

        let first = try source.waitForToken().get()
        #expect(provider.grantTypes == ["password"])

        // The upstream refused the token (revoked): renewed with the refresh token.
        source.invalidate(first)
        let second = try source.waitForToken().get()
        #expect(second.value != first.value)
        #expect(provider.grantTypes == ["password", "refresh_token"])

        // A restart reads the store: the rotated refresh token, still no password.
        let restarted = try self.source(provider, fixture)
        restarted.invalidate(second)
        let third = try restarted.waitForToken().get()
        #expect(third.value != second.value)
        #expect(provider.grantTypes == ["password", "refresh_token", "refresh_token"])

        // The server forgot the refresh tokens: the refresh is refused, and the password is
        // sent once, in the same token request.
        provider.forgetRefreshTokens()
        restarted.invalidate(third)
        let fourth = try restarted.waitForToken().get()
        #expect(fourth.value != third.value)
        #expect(provider.grantTypes == ["password", "refresh_token", "refresh_token", "refresh_token", "password"])
        // The new answer's refresh token serves the next renewal.
        restarted.invalidate(fourth)
        _ = try restarted.waitForToken().get()
        #expect(provider.grantTypes.last == "refresh_token")
        #expect(provider.count("password") == 2)
    }
}
