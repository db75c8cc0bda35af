import Testing

@testable import TokenProxyUpstream

/// Table-driven walks through one upstream transfer's life: each step an event and the
/// answer, then the deadline left and whether libcurl's resend counts.
struct TransferLifeTests {
    typealias Event = TransferStateMachineTests.Event
    typealias Answer = TransferStateMachineTests.Answer

    /// A named walk.
    struct Walk: Sendable, CustomTestStringConvertible {
        let name: String
        var resendable = true
        var idle = true
        let steps: [(Event, Answer)]
        let deadline: TransferStateMachineTests.Armed?
        var resent = false
        var testDescription: String { self.name }
    }

    static let walks: [Walk] = [
        Walk(
            name: "a GET answered whole",
            steps: [
                (.prepared(sendsBody: false), .armed(.firstByte)), (.sending, .decision(true)),
                (.headerLine, .decision(true)), (.headerLine, .decision(true)), (.headComplete, .armed(.idle)),
                (.collected, .decision(true)), (.bodyTaken, .armed(.idle)), (.collected, .decision(false)),
                (.outboxDelivered, .none), (.collected, .decision(true)), (.completed(.ok), .ending(.finish)),
            ],
            deadline: .idle
        ),
        Walk(
            name: "the first-byte deadline starts once the body was sent",
            steps: [
                (.prepared(sendsBody: true), .armed(nil)), (.sending, .decision(true)),
                (.requestSent, .armed(.firstByte)), (.deadlinePassed, .ending(.timeout)),
            ],
            deadline: .firstByte
        ),
        Walk(
            name: "a body paused for its client has no deadline until it resumes",
            steps: [
                (.prepared(sendsBody: false), .armed(.firstByte)), (.headerLine, .decision(true)),
                (.headComplete, .armed(.idle)), (.bodyPaused, .none),
            ],
            deadline: nil
        ),
        Walk(
            name: "a resumed body is idle from then",
            steps: [
                (.headerLine, .decision(true)), (.headComplete, .armed(.idle)), (.bodyPaused, .none),
                (.resumed, .armed(.idle)),
            ],
            deadline: .idle
        ),
        Walk(
            name: "without an idle limit the head lifts the first-byte deadline",
            idle: false,
            steps: [
                (.prepared(sendsBody: false), .armed(.firstByte)), (.headerLine, .decision(true)),
                (.headComplete, .armed(nil)), (.bodyTaken, .armed(nil)), (.resumed, .armed(nil)),
            ],
            deadline: nil
        ),
        Walk(
            name: "libcurl's second send of an idempotent request counts as a resend",
            steps: [
                (.sending, .decision(true)), (.sending, .decision(true)), (.headerLine, .decision(true)),
                (.headComplete, .armed(.idle)), (.completed(.ok), .ending(.finish)),
            ],
            deadline: .idle,
            resent: true
        ),
        Walk(
            name: "libcurl's second send of a POST is stopped and answered",
            resendable: false,
            steps: [
                (.prepared(sendsBody: true), .armed(nil)), (.sending, .decision(true)),
                (.sending, .decision(false)), (.completed(.stoppedByCallback), .ending(.secondSendStopped)),
            ],
            deadline: nil
        ),
        Walk(
            name: "a reset after the head aborts the client",
            steps: [
                (.headerLine, .decision(true)), (.headComplete, .armed(.idle)),
                (.completed(.connectionFailed(reused: true)), .ending(.abort)), (.deadlinePassed, .ending(nil)),
            ],
            deadline: .idle
        ),
        Walk(
            name: "an interim answer then a reset is not a lost reused connection",
            steps: [
                (.sending, .decision(true)), (.headerLine, .decision(true)),
                (.completed(.connectionFailed(reused: true)), .ending(.unreachable)),
            ],
            deadline: nil
        ),
        Walk(
            name: "a refused head is answered with its error",
            steps: [
                (.prepared(sendsBody: false), .armed(.firstByte)), (.headerLine, .decision(true)),
                (.headRefused, .none), (.headerLine, .decision(false)),
                (.completed(.other), .ending(.headRefused(TransferStateMachineTests.framing))),
            ],
            deadline: .firstByte
        ),
    ]

    @Test(arguments: walks)
    func walk(_ walk: Walk) {
        var machine = TransferStateMachineTests.machine(resendable: walk.resendable, idle: walk.idle)
        for (index, (event, expected)) in walk.steps.enumerated() {
            #expect(TransferStateMachineTests.apply(event, to: &machine) == expected, "step \(index): \(event)")
        }
        #expect(TransferStateMachineTests.armed(machine.deadline) == .armed(walk.deadline))
        #expect(machine.resent == walk.resent)
    }
}
