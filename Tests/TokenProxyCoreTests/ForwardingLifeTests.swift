import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyServer

/// Table-driven walks through a forwarded request's life: each step is an event and the
/// action the state machine must answer, and each walk ends with the outcome the access line
/// and the metrics report.
struct ForwardingLifeTests {
    typealias Event = ForwardingStateMachineTests.Event
    typealias Action = ForwardingStateMachine.Action

    /// A named walk on a machine made by `machine`.
    struct Walk: Sendable, CustomTestStringConvertible {
        let name: String
        let machine: @Sendable () -> ForwardingStateMachine
        let steps: [(Event, Action)]
        let outcome: ForwardingOutcome
        var testDescription: String { self.name }
    }

    static func outcome(
        refreshed: Bool = false,
        replayed: Bool = false,
        resent: Bool = false,
        failure: ForwardingOutcome.UpstreamFailure? = nil
    ) -> ForwardingOutcome {
        var outcome = ForwardingOutcome()
        outcome.tokenRefreshed = refreshed
        outcome.replayed = replayed
        outcome.resent = resent
        outcome.upstreamFailure = failure
        return outcome
    }

    static let walks: [Walk] = [
        Walk(
            name: "a request answered at once with a token fetched for it",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: true), .startTransfer(.first)),
                (.bodyBytes(3), .none), (.bodyEnd, .none), (.head(200), .relayResponse), (.finished, .finish),
            ],
            outcome: outcome(refreshed: true)
        ),
        Walk(
            name: "a route without a provider starts at once",
            machine: { ForwardingStateMachineTests.machine(credential: false) },
            steps: [(.start, .startTransfer(.first)), (.head(200), .relayResponse), (.finished, .finish)],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 is dropped and replayed once with a new credential; the second is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)), (.bodyEnd, .none),
                (.head(401), .dropResponse), (.finished, .reauthorize),
                (.credential(fetched: true), .startTransfer(.replay)), (.head(401), .relayResponse),
                (.finished, .finish),
            ],
            outcome: outcome(refreshed: true, replayed: true)
        ),
        Walk(
            name: "a 401 while the body still streams is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.bodyBytes(4), .none), (.head(401), .relayResponse), (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 after a body larger than the replay buffer is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.bodyBytes(11), .none), (.bodyEnd, .none), (.head(401), .relayResponse), (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 on a route without retry_on_401 is relayed",
            machine: { ForwardingStateMachineTests.machine(replays: false, hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(401), .relayResponse), (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 the provider refuses is answered with its error",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.refusedHead, .dropResponse), (.finished, .answer(ForwardingStateMachineTests.refusal)),
                (.credential(fetched: true), .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a lost reused connection is resent once, then answered",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.lostConnection, .startTransfer(.resend)),
                (.lostConnection, .answer(ForwardingStateMachineTests.lostError)),
            ],
            outcome: outcome(resent: true, failure: .unreachable)
        ),
        Walk(
            name: "a request that is not idempotent is never resent",
            machine: { ForwardingStateMachineTests.machine(replays: false, idempotent: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)), (.bodyEnd, .none),
                (.lostConnection, .answer(ForwardingStateMachineTests.lostError)),
            ],
            outcome: outcome(failure: .unreachable)
        ),
        Walk(
            name: "a replay, then a resend of the replay, then an answer",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(401), .dropResponse), (.finished, .reauthorize),
                (.credential(fetched: false), .startTransfer(.replay)), (.lostConnection, .startTransfer(.resend)),
                (.head(200), .relayResponse), (.finished, .finish),
            ],
            outcome: outcome(replayed: true, resent: true)
        ),
        Walk(
            name: "no head in time is a timeout",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.timedOut, .answer(ForwardingStateMachineTests.timeoutError)),
            ],
            outcome: outcome(failure: .timeout)
        ),
        Walk(
            name: "an answer that breaks off after its head aborts the client",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(200), .relayResponse), (.aborted, .abort), (.clientClosed, .none),
            ],
            outcome: outcome(failure: .aborted)
        ),
        Walk(
            name: "libcurl's own resend is counted",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(200), .relayResponse), (.resentByLibcurl, .none), (.finished, .finish),
            ],
            outcome: outcome(resent: true)
        ),
        Walk(
            name: "libcurl's resend of a dropped 401 is not counted",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(401), .dropResponse), (.resentByLibcurl, .none), (.finished, .reauthorize),
                (.clientClosed, .none), (.credential(fetched: false), .none),
            ],
            outcome: outcome(replayed: true)
        ),
        Walk(
            name: "a signed form body is read whole, then replayed from what was kept",
            machine: { ForwardingStateMachineTests.machine(signs: true) },
            steps: [
                (.start, .readSignedBody), (.signedBytes(6), .keepSignedBody), (.signedBytes(4), .keepSignedBody),
                (.signedEnd, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.head(401), .dropResponse), (.finished, .reauthorize),
                (.credential(fetched: false), .startTransfer(.replay)), (.head(200), .relayResponse),
                (.finished, .finish),
            ],
            outcome: outcome(replayed: true)
        ),
        Walk(
            name: "a form body to sign larger than the replay buffer is refused",
            machine: { ForwardingStateMachineTests.machine(signs: true) },
            steps: [
                (.start, .readSignedBody), (.signedBytes(6), .keepSignedBody), (.signedBytes(5), .refuseSignedBody),
                (.signedBytes(1), .none), (.signedEnd, .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a client that leaves during the token wait ends the request",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [(.start, .obtainCredential), (.clientClosed, .none), (.credential(fetched: true), .none)],
            outcome: outcome()
        ),
        Walk(
            name: "a client that leaves during the transfer cancels it",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credential(fetched: false), .startTransfer(.first)),
                (.clientClosed, .cancelTransfer), (.head(200), .none), (.finished, .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a credential that cannot be had is answered",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, .obtainCredential), (.credentialFailed, .answer(ForwardingStateMachineTests.credentialError)),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a transfer that cannot be set up is answered",
            machine: { ForwardingStateMachineTests.machine(credential: false) },
            steps: [(.start, .startTransfer(.first)), (.startFailed, .answer(ForwardingStateMachineTests.startError))],
            outcome: outcome()
        ),
    ]

    @Test(arguments: walks)
    func walk(_ walk: Walk) {
        var machine = walk.machine()
        for (index, (event, expected)) in walk.steps.enumerated() {
            let action = ForwardingStateMachineTests.apply(event, to: &machine)
            #expect(action == expected, "step \(index): \(event)")
        }
        #expect(machine.outcome == walk.outcome)
    }
}
