import Testing

@testable import TokenProxyForwarding
@testable import TokenProxySupport

/// Every event in every state of a forwarded request's life: each state is reached by a
/// prefix of events, then one event is applied and the action checked, the invalid ones
/// included (they answer `.none`).
struct ForwardingStateMachineTests {
    typealias Action = ForwardingStateMachine.Action

    /// An event the owner feeds the state machine.
    enum Event: Sendable, Equatable, CustomStringConvertible {
        case start
        case signedBytes(Int), signedEnd
        case bodyBytes(Int), bodyEnd
        case credential(fetched: Bool), credentialFailed, startFailed
        case head(Int), refusedHead, nonceHead, responseBody
        case resentByLibcurl
        case finished, aborted, unreachable, timedOut, lostConnection
        case clientClosed

        var description: String {
            switch self {
            case .start: "start"
            case .signedBytes(let count): "signedBytes(\(count))"
            case .signedEnd: "signedEnd"
            case .bodyBytes(let count): "bodyBytes(\(count))"
            case .bodyEnd: "bodyEnd"
            case .credential(let fetched): "credential(fetched: \(fetched))"
            case .credentialFailed: "credentialFailed"
            case .startFailed: "startFailed"
            case .head(let status): "head(\(status))"
            case .refusedHead: "refusedHead"
            case .nonceHead: "nonceHead"
            case .responseBody: "responseBody"
            case .resentByLibcurl: "resentByLibcurl"
            case .finished: "finished"
            case .aborted: "aborted"
            case .unreachable: "unreachable"
            case .timedOut: "timedOut"
            case .lostConnection: "lostConnection"
            case .clientClosed: "clientClosed"
            }
        }
    }

    static let credentialError = ProxyError(.tokenUnavailable, "the token endpoint refused")
    static let startError = ProxyError(.upstreamUnreachable, "the route's client_key cannot be read")
    static let refusal = ProxyError(.tokenUnavailable, "the provider refused the credential")
    static let unreachableError = ProxyError(.upstreamUnreachable, "connection refused")
    static let timeoutError = ProxyError(.upstreamTimeout, "the upstream did not answer in time")
    static let lostError = ProxyError(.upstreamUnreachable, "the reused connection was reset")

    /// A machine for a request with a body and a DPoP proof, on a route that replays a 401
    /// and a method that may be resent, with a replay buffer of 10 bytes.
    static func machine(
        credential: Bool = true,
        signs: Bool = false,
        replays: Bool = true,
        idempotent: Bool = true,
        hasBody: Bool = true,
        proves: Bool = true
    ) -> ForwardingStateMachine {
        ForwardingStateMachine(
            replay: ReplayStateMachine(
                replaysUnauthorized: replays,
                idempotent: idempotent,
                limit: 10,
                hasBody: hasBody,
                provesPossession: proves
            ),
            needsCredential: credential,
            hasBody: hasBody,
            signsBody: signs,
            signedBodyLimit: 10
        )
    }

    static func apply(_ event: Event, to machine: inout ForwardingStateMachine) -> Action {
        switch event {
        case .start: return machine.start()
        case .signedBytes(let count): return machine.signedBodyReceived(Self.bytes(count))
        case .signedEnd: return machine.signedBodyEnded()
        case .bodyBytes(let count): return machine.requestBodyReceived(Self.bytes(count))
        case .bodyEnd: return machine.requestBodyEnded()
        case .credential(let fetched): return machine.credentialObtained(fetchedForRequest: fetched)
        case .credentialFailed: return machine.credentialFailed(Self.credentialError)
        case .startFailed: return machine.transferFailedToStart(Self.startError)
        case .head(let status): return machine.responseHeadReceived(status: status, refusal: nil)
        case .refusedHead: return machine.responseHeadReceived(status: 401, refusal: Self.refusal)
        case .nonceHead: return machine.responseHeadReceived(status: 401, refusal: nil, asksForNonce: true)
        case .responseBody: return machine.responseBodyReceived()
        case .resentByLibcurl: return machine.libcurlResent()
        case .finished: return machine.transferEnded(.finish)
        case .aborted: return machine.transferEnded(.abort)
        case .unreachable: return machine.transferEnded(.fail(Self.unreachableError))
        case .timedOut: return machine.transferEnded(.fail(Self.timeoutError))
        case .lostConnection: return machine.transferEnded(.lostReusedConnection(Self.lostError))
        case .clientClosed: return machine.clientClosed()
        }
    }

    /// `count` body bytes: 1, 2, 3, … so that what is kept and sent can be told apart.
    static func bytes(_ count: Int, from first: Int = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: first + $0) }
    }

    /// What an event brings in a state that does not list it: response bytes nobody relays
    /// are dropped, so the transfer never waits for them; anything else is ignored.
    static func unlisted(_ event: Event) -> Action {
        event == .responseBody ? .dropBody : .none
    }

    /// A state, how it is reached, and the action each event brings there (``unlisted(_:)``
    /// when the event is not listed).
    struct StateRow: Sendable {
        let name: String
        let signs: Bool
        let prefix: [Event]
        let answers: [(Event, Action)]
    }

    static let allEvents: [Event] = [
        .start, .signedBytes(4), .signedEnd, .bodyBytes(4), .bodyEnd, .credential(fetched: true), .credentialFailed,
        .startFailed, .head(200), .head(401), .refusedHead, .nonceHead, .responseBody, .resentByLibcurl, .finished,
        .aborted,
        .unreachable,
        .timedOut, .lostConnection, .clientClosed,
    ]

    static let rows: [StateRow] = [
        StateRow(name: "idle", signs: false, prefix: [], answers: [(.start, .obtainCredential(formBody: nil))]),
        StateRow(
            name: "reading the body to sign",
            signs: true,
            prefix: [.start],
            answers: [(.signedEnd, .obtainCredential(formBody: []))]
        ),
        StateRow(
            name: "waiting for the first credential",
            signs: false,
            prefix: [.start],
            answers: [
                (.credential(fetched: true), .startTransfer(.first, .fromClient)),
                (.credentialFailed, .answer(credentialError)),
            ]
        ),
        StateRow(
            name: "waiting for the replay's credential",
            signs: false,
            prefix: [.start, .credential(fetched: false), .bodyEnd, .head(401), .finished],
            answers: [
                (.credential(fetched: true), .startTransfer(.replay, .kept([]))),
                (.credentialFailed, .answer(credentialError)),
            ]
        ),
        StateRow(
            name: "awaiting the head",
            signs: false,
            prefix: [.start, .credential(fetched: false), .bodyEnd],
            answers: [
                (.bodyBytes(4), .forwardBody), (.bodyEnd, .endBody), (.startFailed, .answer(startError)),
                (.head(200), .relayHead), (.head(401), .dropHead), (.refusedHead, .dropHead), (.nonceHead, .dropHead),
                (.finished, .abort),
                (.aborted, .abort), (.unreachable, .answer(unreachableError)), (.timedOut, .answer(timeoutError)),
                (.lostConnection, .startTransfer(.resend, .kept([]))), (.clientClosed, .cancelTransfer),
            ]
        ),
        StateRow(
            name: "relaying",
            signs: false,
            prefix: [.start, .credential(fetched: false), .head(200)],
            answers: [
                (.bodyBytes(4), .forwardBody), (.bodyEnd, .endBody), (.responseBody, .relayBody),
                (.finished, .finish), (.aborted, .abort), (.unreachable, .abort), (.timedOut, .abort),
                (.lostConnection, .abort), (.clientClosed, .cancelTransfer),
            ]
        ),
        StateRow(
            name: "dropping a refused 401",
            signs: false,
            prefix: [.start, .credential(fetched: false), .refusedHead],
            answers: [
                (.bodyBytes(4), .forwardBody), (.bodyEnd, .endBody), (.finished, .answer(refusal)),
                (.aborted, .answer(refusal)), (.unreachable, .answer(refusal)),
                (.timedOut, .answer(refusal)), (.lostConnection, .answer(refusal)), (.clientClosed, .cancelTransfer),
            ]
        ),
        StateRow(
            name: "dropping a 401 to replay",
            signs: false,
            prefix: [.start, .credential(fetched: false), .bodyEnd, .head(401)],
            answers: [
                (.bodyBytes(4), .forwardBody), (.bodyEnd, .endBody), (.finished, .reauthorize(formBody: nil)),
                (.aborted, .reauthorize(formBody: nil)), (.unreachable, .reauthorize(formBody: nil)),
                (.timedOut, .reauthorize(formBody: nil)), (.lostConnection, .reauthorize(formBody: nil)),
                (.clientClosed, .cancelTransfer),
            ]
        ),
        StateRow(
            name: "dropping a 401 that asks for a DPoP nonce",
            signs: false,
            prefix: [.start, .credential(fetched: false), .bodyEnd, .nonceHead],
            answers: [
                (.bodyBytes(4), .forwardBody), (.bodyEnd, .endBody), (.finished, .proveAgain(formBody: nil)),
                (.aborted, .proveAgain(formBody: nil)), (.unreachable, .proveAgain(formBody: nil)),
                (.timedOut, .proveAgain(formBody: nil)), (.lostConnection, .proveAgain(formBody: nil)),
                (.clientClosed, .cancelTransfer),
            ]
        ),
        StateRow(
            name: "waiting for the nonce retry's proof",
            signs: false,
            prefix: [.start, .credential(fetched: false), .bodyEnd, .nonceHead, .finished],
            answers: [
                (.credential(fetched: true), .startTransfer(.nonceRetry, .kept([]))),
                (.credentialFailed, .answer(credentialError)),
            ]
        ),
        StateRow(name: "finished", signs: false, prefix: [.start, .credentialFailed], answers: []),
    ]

    /// One event in one state.
    struct Cell: Sendable, CustomTestStringConvertible {
        let row: StateRow
        let event: Event
        let expected: Action
        var testDescription: String { "\(self.row.name): \(self.event)" }
    }

    static let cells: [Cell] = rows.flatMap { row in
        allEvents.map { event in
            Cell(row: row, event: event, expected: row.answers.first { $0.0 == event }?.1 ?? unlisted(event))
        }
    }

    @Test(arguments: cells)
    func everyEventInEveryState(_ cell: Cell) {
        var machine = Self.machine(signs: cell.row.signs)
        for event in cell.row.prefix {
            _ = Self.apply(event, to: &machine)
        }
        #expect(Self.apply(cell.event, to: &machine) == cell.expected)
    }

    @Test func everyStateAnswersEveryEvent() {
        #expect(Self.cells.count == Self.rows.count * Self.allEvents.count)
        for row in Self.rows {
            for (event, _) in row.answers {
                #expect(Self.allEvents.contains(event), "\(row.name) lists \(event)")
            }
        }
    }

    /// A head with a status the route renews on (`renew_on_status`) is dropped and the request
    /// replayed, once; an unlisted status, a 403 by default, is relayed.
    @Test(arguments: [([401], 403, false), ([401, 403], 403, true), ([403], 401, false), ([401, 403], 401, true)])
    func aListedStatusIsDroppedForAReplay(listed: [Int], status: Int, replayed: Bool) {
        var machine = ForwardingStateMachine(
            replay: ReplayStateMachine(
                replaysUnauthorized: true,
                renewingOn: listed,
                idempotent: true,
                limit: 10,
                hasBody: false
            ),
            needsCredential: true,
            hasBody: false,
            signsBody: false,
            signedBodyLimit: 10
        )
        _ = machine.start()
        _ = machine.credentialObtained(fetchedForRequest: false)
        #expect(
            machine.responseHeadReceived(status: status, refusal: nil) == (replayed ? .dropHead : .relayHead)
        )
    }
}
