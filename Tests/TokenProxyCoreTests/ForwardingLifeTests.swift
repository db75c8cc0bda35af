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
        nonceRetried: Bool = false,
        failure: ForwardingOutcome.UpstreamFailure? = nil
    ) -> ForwardingOutcome {
        var outcome = ForwardingOutcome()
        outcome.nonceRetried = nonceRetried
        outcome.tokenRefreshed = refreshed
        outcome.replayed = replayed
        outcome.resent = resent
        outcome.upstreamFailure = failure
        return outcome
    }

    static let error = ForwardingStateMachineTests.self
    static let noForm = Action.obtainCredential(formBody: nil)
    static let replay = Action.reauthorize(formBody: nil)
    static let first = Action.startTransfer(.first, .fromClient)
    static let firstWithoutBody = Action.startTransfer(.first, .none)
    static let form = ForwardingStateMachineTests.bytes(6) + ForwardingStateMachineTests.bytes(4)

    static let walks: [Walk] = [
        Walk(
            name: "a request answered at once with a token fetched for it",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: true), first), (.bodyBytes(3), .forwardBody),
                (.bodyEnd, .endBody), (.head(200), .relayHead), (.responseBody, .relayBody), (.finished, .finish),
            ],
            outcome: outcome(refreshed: true)
        ),
        Walk(
            name: "a route without a provider starts at once",
            machine: { ForwardingStateMachineTests.machine(credential: false) },
            steps: [(.start, first), (.head(200), .relayHead), (.finished, .finish)],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 is dropped and replayed once with the same body and a new credential; the second is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(3), .forwardBody),
                (.bodyEnd, .endBody), (.head(401), .dropHead), (.responseBody, .dropBody), (.finished, replay),
                (.credential(fetched: true), .startTransfer(.replay, .kept(ForwardingStateMachineTests.bytes(3)))),
                (.head(401), .relayHead), (.responseBody, .relayBody), (.finished, .finish),
            ],
            outcome: outcome(refreshed: true, replayed: true)
        ),
        Walk(
            name: "a 401 asking for a DPoP nonce is sent again once with the same token and body, then a 401 replays",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(3), .forwardBody),
                (.bodyEnd, .endBody), (.nonceHead, .dropHead), (.responseBody, .dropBody),
                (.finished, .proveAgain(formBody: nil)),
                (.credential(fetched: false), .startTransfer(.nonceRetry, .kept(ForwardingStateMachineTests.bytes(3)))),
                (.head(401), .dropHead), (.finished, replay),
                (.credential(fetched: true), .startTransfer(.replay, .kept(ForwardingStateMachineTests.bytes(3)))),
                (.head(200), .relayHead), (.responseBody, .relayBody), (.finished, .finish),
            ],
            outcome: outcome(refreshed: true, replayed: true, nonceRetried: true)
        ),
        Walk(
            name: "a second nonce challenge is relayed: the token is not renewed for it",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.nonceHead, .dropHead),
                (.finished, .proveAgain(formBody: nil)),
                (.credential(fetched: false), .startTransfer(.nonceRetry, .none)),
                (.nonceHead, .relayHead), (.responseBody, .relayBody), (.finished, .finish),
            ],
            outcome: outcome(nonceRetried: true)
        ),
        Walk(
            name: "a nonce challenge to a request without a proof is a plain 401",
            machine: { ForwardingStateMachineTests.machine(hasBody: false, proves: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.nonceHead, .dropHead),
                (.finished, replay), (.credential(fetched: false), .startTransfer(.replay, .none)),
                (.head(200), .relayHead), (.finished, .finish),
            ],
            outcome: outcome(replayed: true)
        ),
        Walk(
            name: "a nonce challenge on a route that does not replay is still answered with the nonce",
            machine: { ForwardingStateMachineTests.machine(replays: false, idempotent: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(2), .forwardBody),
                (.bodyEnd, .endBody), (.nonceHead, .dropHead), (.finished, .proveAgain(formBody: nil)),
                (.credential(fetched: false), .startTransfer(.nonceRetry, .kept(ForwardingStateMachineTests.bytes(2)))),
                (.nonceHead, .relayHead), (.finished, .finish),
            ],
            outcome: outcome(nonceRetried: true)
        ),
        Walk(
            name: "a 401 while the body still streams is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(4), .forwardBody),
                (.head(401), .relayHead), (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 after a body larger than the replay buffer is relayed",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(11), .forwardBody),
                (.bodyEnd, .endBody), (.head(401), .relayHead), (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 on a route without retry_on_401 is relayed",
            machine: { ForwardingStateMachineTests.machine(replays: false, hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(401), .relayHead),
                (.finished, .finish),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a 401 the provider refuses is answered with its error",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.refusedHead, .dropHead),
                (.finished, .answer(error.refusal)), (.credential(fetched: true), .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a lost reused connection is resent once, then answered",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody),
                (.lostConnection, .startTransfer(.resend, .none)), (.lostConnection, .answer(error.lostError)),
            ],
            outcome: outcome(resent: true, failure: .unreachable)
        ),
        Walk(
            name: "a request that is not idempotent is never resent",
            machine: { ForwardingStateMachineTests.machine(replays: false, idempotent: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyEnd, .endBody),
                (.lostConnection, .answer(error.lostError)),
            ],
            outcome: outcome(failure: .unreachable)
        ),
        Walk(
            name: "a replay, then a resend of the replay, then an answer",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(401), .dropHead),
                (.finished, replay), (.credential(fetched: false), .startTransfer(.replay, .none)),
                (.lostConnection, .startTransfer(.resend, .none)), (.head(200), .relayHead), (.finished, .finish),
            ],
            outcome: outcome(replayed: true, resent: true)
        ),
        Walk(
            name: "a replay and then a resend both send the kept body",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.bodyBytes(5), .forwardBody),
                (.bodyEnd, .endBody), (.head(401), .dropHead), (.finished, replay),
                (.credential(fetched: false), .startTransfer(.replay, .kept(ForwardingStateMachineTests.bytes(5)))),
                (.lostConnection, .startTransfer(.resend, .kept(ForwardingStateMachineTests.bytes(5)))),
                (.head(200), .relayHead), (.finished, .finish),
            ],
            outcome: outcome(replayed: true, resent: true)
        ),
        Walk(
            name: "a tunnel's handshake is replayed once after a 401, and a lost connection is never resent",
            machine: { ForwardingStateMachineTests.machine(idempotent: false, hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(401), .dropHead),
                (.finished, replay), (.credential(fetched: false), .startTransfer(.replay, .none)),
                (.lostConnection, .answer(error.lostError)),
            ],
            outcome: outcome(replayed: true, failure: .unreachable)
        ),
        Walk(
            name: "no head in time is a timeout",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody),
                (.timedOut, .answer(error.timeoutError)),
            ],
            outcome: outcome(failure: .timeout)
        ),
        Walk(
            name: "an answer that breaks off after its head aborts the client",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(200), .relayHead),
                (.responseBody, .relayBody), (.aborted, .abort), (.clientClosed, .none),
            ],
            outcome: outcome(failure: .aborted)
        ),
        Walk(
            name: "libcurl's own resend is counted",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(200), .relayHead),
                (.resentByLibcurl, .none), (.finished, .finish),
            ],
            outcome: outcome(resent: true)
        ),
        Walk(
            name: "libcurl's resend of a dropped 401 is not counted",
            machine: { ForwardingStateMachineTests.machine(hasBody: false) },
            steps: [
                (.start, noForm), (.credential(fetched: false), firstWithoutBody), (.head(401), .dropHead),
                (.resentByLibcurl, .none), (.finished, replay), (.clientClosed, .none),
                (.credential(fetched: false), .none),
            ],
            outcome: outcome(replayed: true)
        ),
        Walk(
            name: "a signed form body is read whole, signed with each credential, and sent by each attempt",
            machine: { ForwardingStateMachineTests.machine(signs: true) },
            steps: [
                (.start, .readSignedBody), (.signedBytes(6), .none), (.signedBytes(4), .none),
                (.signedEnd, .obtainCredential(formBody: form)),
                (.credential(fetched: false), .startTransfer(.first, .kept(form))), (.head(401), .dropHead),
                (.finished, .reauthorize(formBody: form)),
                (.credential(fetched: false), .startTransfer(.replay, .kept(form))), (.head(200), .relayHead),
                (.finished, .finish),
            ],
            outcome: outcome(replayed: true)
        ),
        Walk(
            name: "a form body to sign larger than the replay buffer is refused",
            machine: { ForwardingStateMachineTests.machine(signs: true) },
            steps: [
                (.start, .readSignedBody), (.signedBytes(6), .none), (.signedBytes(5), .refuseSignedBody),
                (.signedBytes(1), .none), (.signedEnd, .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a client that leaves during the token wait ends the request",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [(.start, noForm), (.clientClosed, .none), (.credential(fetched: true), .none)],
            outcome: outcome()
        ),
        Walk(
            name: "a client that leaves during the transfer cancels it",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [
                (.start, noForm), (.credential(fetched: false), first), (.clientClosed, .cancelTransfer),
                (.head(200), .none), (.responseBody, .dropBody), (.finished, .none),
            ],
            outcome: outcome()
        ),
        Walk(
            name: "a credential that cannot be had is answered",
            machine: { ForwardingStateMachineTests.machine() },
            steps: [(.start, noForm), (.credentialFailed, .answer(error.credentialError))],
            outcome: outcome()
        ),
        Walk(
            name: "a transfer that cannot be set up is answered",
            machine: { ForwardingStateMachineTests.machine(credential: false) },
            steps: [(.start, first), (.startFailed, .answer(error.startError))],
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
