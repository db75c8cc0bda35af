import Foundation
import Logging
import Testing

@testable import TokenProxyCore

struct ReplayStateMachineTests {
    @Test func replaysOnceWhenTheBodyIsComplete() {
        var machine = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        machine.bodyReceived(4)
        #expect(machine.unauthorized() == .relay)  // body not complete yet
        var complete = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        complete.bodyReceived(10)
        complete.bodyEnded()
        #expect(complete.unauthorized() == .replay)
        #expect(complete.unauthorized() == .relay)
    }

    @Test func aBodyOverTheLimitIsNeverReplayed() {
        var machine = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        machine.bodyReceived(11)
        #expect(!machine.keepsBody)
        machine.bodyEnded()
        #expect(machine.unauthorized() == .relay)
    }

    @Test func disabledNeverReplays() {
        var machine = ReplayStateMachine(enabled: false, limit: 10, hasBody: false)
        #expect(machine.unauthorized() == .relay)
    }

    @Test func noBodyReplaysAtOnce() {
        var machine = ReplayStateMachine(enabled: true, limit: 0, hasBody: false)
        #expect(machine.unauthorized() == .replay)
    }
}
