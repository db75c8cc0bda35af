import Foundation
import Synchronization
import Testing

@testable import TokenProxyCore

@Suite struct DeviceCodeLoginTests {
    /// Runs a device login whose waits are recorded instead of slept.
    private func login(_ fixture: LoginFixture) -> (Result<LoginResult, LoginError>, [Double], [DeviceCodeLogin.Prompt])
    {
        let waits = Mutex<[Double]>([])
        let prompts = Mutex<[DeviceCodeLogin.Prompt]>([])
        let login = DeviceCodeLogin(
            provider: fixture.configuration,
            fetcher: fixture.fetcher,
            store: fixture.store,
            limits: fixture.limits,
            sleep: { seconds in waits.withLock { $0.append(seconds) } }
        )
        let result = login.run { prompt in prompts.withLock { $0.append(prompt) } }
        return (result, waits.withLock { $0 }, prompts.withLock { $0 })
    }

    @Test func pendingAndSlowDownThenApproval() throws {
        let fixture = try LoginFixture(grant: "device_code")
        fixture.provider.deviceInterval = 2
        fixture.provider.devicePolls = ["authorization_pending", "slow_down", "authorization_pending"]
        let (result, waits, prompts) = self.login(fixture)
        let login = try result.get()
        #expect(login.hasRefreshToken)
        // The announced interval, then 5 s more for good after slow_down (RFC 8628 §3.5).
        #expect(waits == [2, 2, 7, 7])
        let prompt = try #require(prompts.first)
        #expect(prompt.userCode == "WDJB-MJHT")
        #expect(prompt.verificationURI == "\(fixture.provider.origin)/activate")
        #expect(prompt.verificationURIComplete == "\(fixture.provider.origin)/activate?user_code=WDJB-MJHT")
        #expect(fixture.provider.count("urn:ietf:params:oauth:grant-type:device_code") == 4)
        let stored = try #require(try fixture.store.read().grants["app"])
        #expect(stored.accessToken == "access-1")
        #expect(stored.refreshToken == "refresh-1")
    }

    @Test func theDefaultIntervalIsFiveSeconds() throws {
        let fixture = try LoginFixture(grant: "device_code")
        fixture.provider.devicePolls = ["authorization_pending"]
        let (result, waits, _) = self.login(fixture)
        _ = try result.get()
        #expect(waits == [5, 5])
    }

    @Test(arguments: [("access_denied", LoginError.Code.denied), ("expired_token", LoginError.Code.expired)])
    func refusalsEndThePolling(answer: String, code: LoginError.Code) throws {
        let fixture = try LoginFixture(grant: "device_code")
        fixture.provider.devicePolls = ["authorization_pending", answer, "authorization_pending"]
        let (result, waits, _) = self.login(fixture)
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == code)
        #expect(waits.count == 2)
        #expect(try fixture.store.read().grants["app"] == nil)
    }

    @Test func pollingStopsWhenTheCodeExpires() {
        var machine = DevicePollingStateMachine(interval: 5, lifetime: 12)
        #expect(machine.firstAction == .wait(5))
        #expect(machine.next(after: .error("authorization_pending", description: nil), elapsed: 5) == .wait(5))
        guard case .fail(let error) = machine.next(after: .error("slow_down", description: nil), elapsed: 10) else {
            Issue.record("polling went on past the code's lifetime")
            return
        }
        #expect(error.code == .expired)
        #expect(machine.interval == 10)
    }
}

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
