import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyUpstream

@Suite struct LogoutTests {
    private func loggedIn(_ fixture: LoginFixture) throws {
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            let url = prompt.url
            Thread.detachNewThread { _ = fixture.browse(url) }
        }
        _ = try result.get()
    }

    /// A logout of `configuration` from `store`, over the tests' shared engine.
    private func logout(_ configuration: ProviderConfiguration, store: any TokenStore) throws -> Logout.Report {
        try Logout(
            provider: configuration,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: store,
            limits: Limits()
        )
        .run().get()
    }

    private func logout(_ fixture: LoginFixture) throws -> Logout.Report {
        try Logout(
            provider: fixture.configuration,
            fetcher: fixture.fetcher,
            store: fixture.store,
            limits: fixture.limits
        )
        .run().get()
    }

    @Test func logoutRevokesBothTokensThenDeletesThem() throws {
        let fixture = try LoginFixture()
        try self.loggedIn(fixture)
        let report = try self.logout(fixture)
        #expect(report.revoked == ["refresh_token", "access_token"])
        #expect(
            fixture.provider.revocations == [
                .init(token: "refresh-1", hint: "refresh_token"), .init(token: "access-1", hint: "access_token"),
            ]
        )
        let contents = try fixture.store.read()
        #expect(contents.grants["app"] == nil)
        #expect(contents.pendingRevocations.isEmpty)
    }

    @Test func anUnavailableProviderLeavesAPendingRevocationThatTheNextLogoutSends() throws {
        let fixture = try LoginFixture()
        try self.loggedIn(fixture)
        fixture.provider.revocationStatuses = [503]
        let first = try self.logout(fixture)
        #expect(first.revoked == ["access_token"])
        #expect(first.pending.count == 1)
        var contents = try fixture.store.read()
        #expect(contents.grants["app"] == nil)
        #expect(contents.pendingRevocations.map(\.tokenTypeHint) == ["refresh_token"])

        let second = try self.logout(fixture)
        #expect(!second.hadTokens)
        #expect(second.retriedPending == 1)
        contents = try fixture.store.read()
        #expect(contents.pendingRevocations.isEmpty)
        #expect(fixture.provider.revocations.filter { $0.token == "refresh-1" }.count == 2)
    }

    @Test func whenDiscoveryFailsNothingIsDeleted() throws {
        let json = """
            {"providers": {"app": {"grant": "device_code", "issuer": "http://127.0.0.1:1", "client_id": "c",
              "allow_insecure_endpoints": true}}, "routes": []}
            """
        let configuration = try #require(TestProxy.configuration(json).providers["app"])
        let store = MemoryTokenStore()
        let grant = StoredGrant(
            accessToken: "a",
            refreshToken: "r",
            configFingerprint: configuration.tokenFingerprint()
        )
        try store.update { $0.grants["app"] = grant }
        let report = try self.logout(configuration, store: store)
        #expect(report.discoveryFailure != nil)
        #expect(try store.read().grants["app"] == grant)
    }

    @Test func tokensOfOtherSettingsAreDeletedWithoutBeingSent() throws {
        let fixture = try LoginFixture()
        try fixture.store.update {
            $0.grants["app"] = StoredGrant(accessToken: "old-a", refreshToken: "old-r", configFingerprint: "other")
        }
        let report = try self.logout(fixture)
        #expect(report.otherSettings)
        #expect(fixture.provider.revocations.isEmpty)
        #expect(try fixture.store.read().grants["app"] == nil)
    }

    @Test func withoutARevocationEndpointTheTokensAreOnlyDeleted() throws {
        let provider = try FakeOAuthProvider()
        let json = """
            {"providers": {"app": {"grant": "device_code", "token_url": "\(provider.origin)/token",
              "device_authorization_url": "\(provider.origin)/device", "client_id": "c",
              "allow_insecure_endpoints": true}}, "routes": []}
            """
        let configuration = try #require(TestProxy.configuration(json).providers["app"])
        let store = MemoryTokenStore()
        try store.update {
            $0.grants["app"] = StoredGrant(
                accessToken: "a",
                refreshToken: "r",
                configFingerprint: configuration.tokenFingerprint()
            )
        }
        let report = try self.logout(configuration, store: store)
        #expect(report.noRevocationEndpoint)
        #expect(provider.revocations.isEmpty)
        #expect(try store.read().grants["app"] == nil)
    }
}
