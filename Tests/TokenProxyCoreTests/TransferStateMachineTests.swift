import Testing

@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// The life of one upstream transfer: every event in every state (reached by a prefix of
/// events), and walks that check the answers, the deadline left and libcurl's resend.
struct TransferStateMachineTests {
    typealias Ending = TransferStateMachine.Ending

    /// An event libcurl's callbacks or the engine feed the state machine.
    enum Event: Sendable, Equatable, CustomStringConvertible {
        case prepared(sendsBody: Bool)
        case requestSent, sending, headerLine, headRefused, headComplete
        case bodyTaken, bodyPaused, resumed, collected, outboxDelivered
        case deadlinePassed
        case completed(TransferStateMachine.Result)

        var description: String {
            switch self {
            case .prepared(let sendsBody): "prepared(sendsBody: \(sendsBody))"
            case .requestSent: "requestSent"
            case .sending: "sending"
            case .headerLine: "headerLine"
            case .headRefused: "headRefused"
            case .headComplete: "headComplete"
            case .bodyTaken: "bodyTaken"
            case .bodyPaused: "bodyPaused"
            case .resumed: "resumed"
            case .collected: "collected"
            case .outboxDelivered: "outboxDelivered"
            case .deadlinePassed: "deadlinePassed"
            case .completed(let result): "completed(\(result))"
            }
        }
    }

    /// Which deadline an event armed; `other` for an instant that is neither, which no
    /// expected answer names.
    enum Armed: Sendable, Equatable {
        case firstByte, idle, other
    }

    /// What the state machine answered.
    enum Answer: Sendable, Equatable {
        case none
        case armed(Armed?)
        case decision(Bool)
        case ending(Ending?)
    }

    static let start = MonotonicTime.now
    static let firstByte = 10_000
    static let idle = 60_000
    static let framing = ProxyError(.upstreamUnreachable, "two Content-Length fields")

    static func machine(resendable: Bool = true, idle: Bool = true) -> TransferStateMachine {
        TransferStateMachine(
            resendable: resendable,
            firstByteLimit: Self.firstByte,
            idleLimit: idle ? Self.idle : nil
        )
    }

    static func armed(_ instant: MonotonicTime?) -> Answer {
        switch instant {
        case nil: .armed(nil)
        case Self.start.advanced(byMilliseconds: Self.firstByte): .armed(.firstByte)
        case Self.start.advanced(byMilliseconds: Self.idle): .armed(.idle)
        default: .armed(.other)
        }
    }

    static func apply(_ event: Event, to machine: inout TransferStateMachine) -> Answer {
        let now = Self.start
        switch event {
        case .prepared(let sendsBody): return armed(machine.prepared(sendsBody: sendsBody, now: now))
        case .requestSent: return armed(machine.requestSent(now: now))
        case .sending: return .decision(machine.sending())
        case .headerLine: return .decision(machine.headerLineArrived())
        case .headRefused:
            machine.headRefused(Self.framing)
            return .none
        case .headComplete: return armed(machine.headComplete(now: now))
        case .bodyTaken: return armed(machine.bodyTaken(now: now))
        case .bodyPaused:
            machine.bodyPaused()
            return .none
        case .resumed: return armed(machine.resumed(now: now))
        case .collected: return .decision(machine.collected())
        case .outboxDelivered:
            machine.outboxDelivered()
            return .none
        case .deadlinePassed: return .ending(machine.deadlinePassed())
        case .completed(let result): return .ending(machine.completed(result))
        }
    }

    static let results: [TransferStateMachine.Result] = [
        .ok, .stoppedByCallback, .timedOut(requestSent: true), .timedOut(requestSent: false),
        .connectionFailed(reused: true), .connectionFailed(reused: false), .rewindFailed, .other,
    ]

    static let allEvents: [Event] =
        [
            .prepared(sendsBody: false), .prepared(sendsBody: true), .requestSent, .sending, .headerLine,
            .headRefused, .headComplete, .bodyTaken, .bodyPaused, .resumed, .collected, .outboxDelivered,
            .deadlinePassed,
        ] + results.map { .completed($0) }

    /// A state, how it is reached, and every event's answer there.
    struct StateRow: Sendable {
        let name: String
        let prefix: [Event]
        let answer: @Sendable (Event) -> Answer
    }

    /// The answers before any head went to the sink; `begun` once a line of the response
    /// arrived (a failure is then not a lost reused connection).
    static func beforeHead(begun: Bool) -> @Sendable (Event) -> Answer {
        { event in
            switch event {
            case .prepared(let sendsBody): .armed(sendsBody ? nil : .firstByte)
            case .requestSent: .armed(.firstByte)
            case .sending, .headerLine, .collected: .decision(true)
            case .headComplete: .armed(.idle)
            case .bodyTaken, .resumed: .armed(nil)
            case .headRefused, .bodyPaused, .outboxDelivered: .none
            case .deadlinePassed: .ending(.timeout)
            case .completed(.timedOut(requestSent: true)): .ending(.timeout)
            case .completed(.connectionFailed(reused: true)), .completed(.rewindFailed):
                .ending(begun ? .unreachable : .lostReusedConnection)
            case .completed: .ending(.unreachable)
            }
        }
    }

    static let rows: [StateRow] = [
        StateRow(name: "awaiting the response", prefix: [], answer: beforeHead(begun: false)),
        StateRow(name: "a line arrived", prefix: [.headerLine], answer: beforeHead(begun: true)),
        StateRow(name: "head refused", prefix: [.headerLine, .headRefused]) { event in
            switch event {
            case .prepared(let sendsBody): .armed(sendsBody ? nil : .firstByte)
            case .requestSent: .armed(.firstByte)
            case .sending, .collected: .decision(true)
            case .headerLine: .decision(false)
            case .headComplete, .bodyTaken, .resumed: .armed(nil)
            case .headRefused, .bodyPaused, .outboxDelivered: .none
            case .deadlinePassed: .ending(.timeout)
            case .completed: .ending(.headRefused(framing))
            }
        },
        StateRow(name: "relaying", prefix: [.headerLine, .headComplete]) { event in
            switch event {
            case .prepared, .requestSent, .headComplete: .armed(nil)
            case .sending, .collected: .decision(true)
            case .headerLine: .decision(false)
            case .bodyTaken, .resumed: .armed(.idle)
            case .headRefused, .bodyPaused, .outboxDelivered: .none
            case .deadlinePassed: .ending(.abort)
            case .completed(.ok): .ending(.finish)
            case .completed: .ending(.abort)
            }
        },
        StateRow(name: "ended", prefix: [.headerLine, .headComplete, .completed(.ok)]) { event in
            switch event {
            case .prepared, .requestSent, .headComplete, .bodyTaken, .resumed: .armed(nil)
            case .sending, .collected: .decision(true)
            case .headerLine: .decision(false)
            case .headRefused, .bodyPaused, .outboxDelivered: .none
            case .deadlinePassed, .completed: .ending(nil)
            }
        },
    ]

    /// One event in one state.
    struct Cell: Sendable, CustomTestStringConvertible {
        let row: StateRow
        let event: Event
        var testDescription: String { "\(self.row.name): \(self.event)" }
    }

    static let cells: [Cell] = rows.flatMap { row in allEvents.map { Cell(row: row, event: $0) } }

    @Test(arguments: cells)
    func everyEventInEveryState(_ cell: Cell) {
        var machine = Self.machine()
        for event in cell.row.prefix {
            _ = Self.apply(event, to: &machine)
        }
        #expect(Self.apply(cell.event, to: &machine) == cell.row.answer(cell.event))
    }
}
