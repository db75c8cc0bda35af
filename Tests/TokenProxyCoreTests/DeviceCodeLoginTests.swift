import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials

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
            sleep: { seconds in waits.withLockedValue { $0.append(seconds) } }
        )
        let result = login.run(timeout: 300) { prompt in prompts.withLockedValue { $0.append(prompt) } }
        return (result, waits.withLockedValue { $0 }, prompts.withLockedValue { $0 })
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
