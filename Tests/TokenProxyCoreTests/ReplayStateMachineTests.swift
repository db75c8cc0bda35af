import Foundation
import Logging
import Testing

@testable import TokenProxyForwarding

struct ReplayStateMachineTests {
    @Test func replaysOnceWhenTheBodyIsComplete() {
        var machine = ReplayStateMachine(replaysUnauthorized: true, idempotent: false, limit: 10, hasBody: true)
        machine.bodyReceived(4)
        #expect(machine.unauthorized() == .relay)  // body not complete yet
        var complete = ReplayStateMachine(replaysUnauthorized: true, idempotent: false, limit: 10, hasBody: true)
        complete.bodyReceived(10)
        complete.bodyEnded()
        #expect(complete.unauthorized() == .replay)
        #expect(complete.unauthorized() == .relay)
    }

    @Test func aBodyOverTheLimitIsNeverReplayed() {
        var machine = ReplayStateMachine(replaysUnauthorized: true, idempotent: true, limit: 10, hasBody: true)
        machine.bodyReceived(11)
        #expect(!machine.keepsBody)
        machine.bodyEnded()
        #expect(machine.unauthorized() == .relay)
        #expect(machine.lostReusedConnection() == .fail)
    }

    /// `renew_on_status`: only the listed statuses say the token was refused.
    @Test(arguments: [
        ([401], 401, true), ([401], 403, false), ([401, 403], 403, true), ([403], 401, false), ([401], 400, false),
    ])
    func renewsOnlyTheListedStatuses(listed: [Int], status: Int, renews: Bool) {
        let machine = ReplayStateMachine(
            replaysUnauthorized: true,
            renewingOn: listed,
            idempotent: false,
            limit: 10,
            hasBody: false
        )
        #expect(machine.renews(status) == renews)
    }

    @Test func disabledNeverReplays() {
        var machine = ReplayStateMachine(replaysUnauthorized: false, idempotent: true, limit: 10, hasBody: false)
        #expect(machine.unauthorized() == .relay)
    }

    @Test func noBodyReplaysAtOnce() {
        var machine = ReplayStateMachine(replaysUnauthorized: true, idempotent: false, limit: 0, hasBody: false)
        #expect(machine.unauthorized() == .replay)
    }

    /// Whether a lost reused connection is resent: (idempotent, body size or nil for none,
    /// body complete, the expected decision).
    @Test(
        arguments: [
            (true, nil, true, ReplayStateMachine.LostConnectionDecision.resend),
            (true, 5, true, .resend),
            (true, 10, true, .resend),
            (true, 5, false, .fail),
            (true, 11, true, .fail),
            (false, nil, true, .fail),
            (false, 5, true, .fail),
        ] as [(Bool, Int?, Bool, ReplayStateMachine.LostConnectionDecision)]
    )
    func resendsAnIdempotentRequestWithItsWholeBody(
        idempotent: Bool,
        body: Int?,
        complete: Bool,
        expected: ReplayStateMachine.LostConnectionDecision
    ) {
        var machine = ReplayStateMachine(
            replaysUnauthorized: false,
            idempotent: idempotent,
            limit: 10,
            hasBody: body != nil
        )
        if let body {
            machine.bodyReceived(body)
            if complete {
                machine.bodyEnded()
            }
        }
        #expect(machine.lostReusedConnection() == expected)
    }

    @Test func resendsOnlyOnce() {
        var machine = ReplayStateMachine(replaysUnauthorized: false, idempotent: true, limit: 10, hasBody: false)
        #expect(machine.lostReusedConnection() == .resend)
        #expect(!machine.keepsBody)
        #expect(machine.lostReusedConnection() == .fail)
    }

    @Test func aResendAndAReplayAreEachMadeOnceInEitherOrder() {
        var resentFirst = ReplayStateMachine(replaysUnauthorized: true, idempotent: true, limit: 10, hasBody: true)
        resentFirst.bodyReceived(6)
        resentFirst.bodyEnded()
        #expect(resentFirst.lostReusedConnection() == .resend)
        // The body stays kept for the replay still allowed.
        #expect(resentFirst.keepsBody)
        #expect(resentFirst.unauthorized() == .replay)
        #expect(!resentFirst.keepsBody)
        #expect(resentFirst.lostReusedConnection() == .fail)
        #expect(resentFirst.unauthorized() == .relay)

        var replayedFirst = ReplayStateMachine(replaysUnauthorized: true, idempotent: true, limit: 10, hasBody: false)
        #expect(replayedFirst.unauthorized() == .replay)
        #expect(replayedFirst.keepsBody)
        #expect(replayedFirst.lostReusedConnection() == .resend)
        #expect(replayedFirst.unauthorized() == .relay)
        #expect(replayedFirst.lostReusedConnection() == .fail)
    }

    @Test(arguments: [
        ("GET", true), ("HEAD", true), ("PUT", true), ("DELETE", true), ("OPTIONS", true), ("TRACE", true),
        ("POST", false), ("PATCH", false), ("CONNECT", false), ("get", false), ("PROPFIND", false),
    ])
    func idempotentMethods(method: String, idempotent: Bool) {
        #expect(ReplayStateMachine.isIdempotent(method) == idempotent)
    }
}
