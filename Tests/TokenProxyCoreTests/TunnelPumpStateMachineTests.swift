import Testing

@testable import TokenProxyForwarding

/// A tunnel's two directions: every event in every state (each reached by a prefix of
/// events), and named walks through half-closes in both orders, back-pressure both ways,
/// failures, and events after the end.
struct TunnelPumpStateMachineTests {
    typealias Action = TunnelPumpStateMachine.Action

    /// An event the pump feeds the state machine.
    enum Event: Sendable, Equatable, CustomStringConvertible {
        case clientBytes, clientEnd
        case sendWouldBlock(queued: Int)
        case sendDrained, upstreamWritable
        case upstreamReadable, clientWritable, receiveWouldBlock, clientFull, upstreamEnded
        case upstreamFailed, close

        var description: String {
            switch self {
            case .clientBytes: "clientBytes"
            case .clientEnd: "clientEnd"
            case .sendWouldBlock(let queued): "sendWouldBlock(queued: \(queued))"
            case .sendDrained: "sendDrained"
            case .upstreamWritable: "upstreamWritable"
            case .upstreamReadable: "upstreamReadable"
            case .clientWritable: "clientWritable"
            case .receiveWouldBlock: "receiveWouldBlock"
            case .clientFull: "clientFull"
            case .upstreamEnded: "upstreamEnded"
            case .upstreamFailed: "upstreamFailed"
            case .close: "close"
            }
        }
    }

    static let mark = TunnelPumpStateMachine.pendingMark
    /// A send that would block with few bytes waiting, and one with the mark reached.
    static let blockedLow = Event.sendWouldBlock(queued: 1024)
    static let blockedFull = Event.sendWouldBlock(queued: mark)

    static func apply(_ event: Event, to machine: inout TunnelPumpStateMachine) -> Action {
        switch event {
        case .clientBytes: machine.clientBytesQueued()
        case .clientEnd: machine.clientEnded()
        case .sendWouldBlock(let queued): machine.sendWouldBlock(queued: queued)
        case .sendDrained: machine.sendDrained()
        case .upstreamWritable: machine.upstreamWritable()
        case .upstreamReadable: machine.upstreamReadable()
        case .clientWritable: machine.clientWritable()
        case .receiveWouldBlock: machine.receiveWouldBlock()
        case .clientFull: machine.clientFull()
        case .upstreamEnded: machine.upstreamEnded()
        case .upstreamFailed: machine.upstreamFailed()
        case .close: machine.close()
        }
    }

    static let allEvents: [Event] = [
        .clientBytes, .clientEnd, blockedLow, blockedFull, .sendDrained, .upstreamWritable, .upstreamReadable,
        .clientWritable, .receiveWouldBlock, .clientFull, .upstreamEnded, .upstreamFailed, .close,
    ]

    /// A state, how it is reached, the action each event brings there (`.none` when the event
    /// is not listed), and the events that cannot happen there: an assertion stops them in a
    /// debug build, so they are listed and not run.
    struct StateRow: Sendable {
        let name: String
        let prefix: [Event]
        let answers: [(Event, Action)]
        var impossible: [Event] = []
    }

    /// Events that cannot follow the client's end.
    static let afterClientEnd: [Event] = [.clientBytes, .clientEnd]
    /// Send outcomes, which cannot follow the shut of the upstream's sending side.
    static let sendOutcomes: [Event] = [blockedLow, blockedFull, .sendDrained]
    /// Receive outcomes, which cannot follow the upstream's end.
    static let receiveOutcomes: [Event] = [.receiveWouldBlock, .clientFull, .upstreamEnded]
    /// Either side's failure and the owner's close, in any open state.
    static let ending: [(Event, Action)] = [(.upstreamFailed, .abort), (.close, .close)]

    static let rows: [StateRow] = [
        StateRow(
            name: "both flowing, readability not watched",
            prefix: [],
            answers: [
                (.clientBytes, .send), (.clientEnd, .shutUpstreamSending(stopWatchingWritable: false, finish: false)),
                (blockedLow, .watchWritable(pauseClient: false)), (blockedFull, .watchWritable(pauseClient: true)),
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.receiveWouldBlock, .watchReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: false)),
            ] + ending
        ),
        StateRow(
            name: "both flowing, readability watched",
            prefix: [.receiveWouldBlock],
            answers: [
                (.clientBytes, .send), (.clientEnd, .shutUpstreamSending(stopWatchingWritable: false, finish: false)),
                (blockedLow, .watchWritable(pauseClient: false)), (blockedFull, .watchWritable(pauseClient: true)),
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.clientFull, .stopWatchingReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: true, finish: false)),
            ] + ending
        ),
        StateRow(
            name: "a send blocked, the client reading",
            prefix: [.clientBytes, blockedLow],
            answers: [
                (.clientBytes, .send), (.clientEnd, .send), (blockedFull, .pauseClient),
                (.sendDrained, .stopWatchingWritable(resumeClient: false)), (.upstreamWritable, .send),
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.receiveWouldBlock, .watchReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: false)),
            ] + ending
        ),
        StateRow(
            name: "a send blocked, the client paused",
            prefix: [.clientBytes, blockedFull],
            answers: [
                (.clientBytes, .send), (.clientEnd, .send), (blockedLow, .resumeClient),
                (.sendDrained, .stopWatchingWritable(resumeClient: true)), (.upstreamWritable, .send),
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.receiveWouldBlock, .watchReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: false)),
            ] + ending
        ),
        StateRow(
            name: "the client ended, its last bytes blocked",
            prefix: [.clientBytes, blockedLow, .clientEnd],
            answers: [
                (.sendDrained, .shutUpstreamSending(stopWatchingWritable: true, finish: false)),
                (.upstreamWritable, .send), (.upstreamReadable, .receive), (.clientWritable, .receive),
                (.receiveWouldBlock, .watchReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: false)),
            ] + ending,
            impossible: afterClientEnd
        ),
        StateRow(
            name: "the upstream's sending side shut, readability not watched",
            prefix: [.clientEnd],
            answers: [
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.receiveWouldBlock, .watchReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: true)),
            ] + ending,
            impossible: afterClientEnd + sendOutcomes
        ),
        StateRow(
            name: "the upstream's sending side shut, readability watched",
            prefix: [.clientEnd, .receiveWouldBlock],
            answers: [
                (.upstreamReadable, .receive), (.clientWritable, .receive), (.clientFull, .stopWatchingReadable),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: true, finish: true)),
            ] + ending,
            impossible: afterClientEnd + sendOutcomes
        ),
        StateRow(
            name: "the upstream ended, the client flowing",
            prefix: [.upstreamEnded],
            answers: [
                (.clientBytes, .send), (.clientEnd, .shutUpstreamSending(stopWatchingWritable: false, finish: true)),
                (blockedLow, .watchWritable(pauseClient: false)), (blockedFull, .watchWritable(pauseClient: true)),
            ] + ending,
            impossible: receiveOutcomes
        ),
        StateRow(
            name: "the upstream ended, a send blocked",
            prefix: [.upstreamEnded, .clientBytes, blockedFull],
            answers: [
                (.clientBytes, .send), (.clientEnd, .send), (blockedLow, .resumeClient),
                (.sendDrained, .stopWatchingWritable(resumeClient: true)), (.upstreamWritable, .send),
            ] + ending,
            impossible: receiveOutcomes
        ),
        StateRow(
            name: "the upstream ended, the client's last bytes blocked",
            prefix: [.upstreamEnded, .clientBytes, blockedLow, .clientEnd],
            answers: [
                (.sendDrained, .shutUpstreamSending(stopWatchingWritable: true, finish: true)),
                (.upstreamWritable, .send),
            ] + ending,
            impossible: afterClientEnd + receiveOutcomes
        ),
        StateRow(name: "finished", prefix: [.clientEnd, .upstreamEnded], answers: []),
        StateRow(name: "aborted", prefix: [.clientBytes, .upstreamFailed], answers: []),
        StateRow(name: "closed by the owner", prefix: [.receiveWouldBlock, .close], answers: []),
    ]

    /// One event in one state.
    struct Cell: Sendable, CustomTestStringConvertible {
        let row: StateRow
        let event: Event
        let expected: Action
        var testDescription: String { "\(self.row.name): \(self.event)" }
    }

    static let cells: [Cell] = rows.flatMap { row in
        allEvents.filter { !row.impossible.contains($0) }.map { event in
            Cell(row: row, event: event, expected: row.answers.first { $0.0 == event }?.1 ?? .none)
        }
    }

    @Test(arguments: cells)
    func everyEventInEveryState(_ cell: Cell) {
        var machine = TunnelPumpStateMachine()
        for event in cell.row.prefix {
            _ = Self.apply(event, to: &machine)
        }
        #expect(Self.apply(cell.event, to: &machine) == cell.expected)
    }

    @Test func everyStateAnswersEveryEvent() {
        var count = 0
        for row in Self.rows {
            count += Self.allEvents.count
            for (event, _) in row.answers {
                #expect(Self.allEvents.contains(event), "\(row.name) lists \(event)")
                #expect(!row.impossible.contains(event), "\(row.name) answers \(event) and calls it impossible")
            }
            for event in row.impossible {
                #expect(Self.allEvents.contains(event), "\(row.name) calls \(event) impossible")
            }
        }
        #expect(Self.cells.count + Self.rows.map(\.impossible.count).reduce(0, +) == count)
    }

    // MARK: Walks

    /// Named walks through the state machine; each event's action is checked.
    static let walks: [(String, [(Event, Action)])] = [
        (
            "the client ends first, then the upstream",
            [
                (.clientBytes, .send), (.sendDrained, .none),
                (.clientEnd, .shutUpstreamSending(stopWatchingWritable: false, finish: false)),
                (.upstreamReadable, .receive), (.receiveWouldBlock, .watchReadable), (.upstreamReadable, .receive),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: true, finish: true)),
                (.close, .none),
            ]
        ),
        (
            "the upstream ends first, then the client, which went on sending",
            [
                (.upstreamReadable, .receive),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: false)),
                (.clientWritable, .none), (.upstreamReadable, .none),
                (.clientBytes, .send), (.sendDrained, .none),
                (.clientEnd, .shutUpstreamSending(stopWatchingWritable: false, finish: true)),
                (.close, .none),
            ]
        ),
        (
            "the client's end waits for its last bytes",
            [
                (.clientBytes, .send), (blockedLow, .watchWritable(pauseClient: false)), (.clientEnd, .send),
                (blockedLow, .none), (.upstreamWritable, .send),
                (.sendDrained, .shutUpstreamSending(stopWatchingWritable: true, finish: false)),
                (.upstreamEnded, .endClientOutput(stopWatchingReadable: false, finish: true)),
            ]
        ),
        (
            "a slow upstream pauses the client until its bytes fall below the mark",
            [
                (.clientBytes, .send), (blockedFull, .watchWritable(pauseClient: true)),
                (.upstreamWritable, .send), (blockedFull, .none),
                (.upstreamWritable, .send), (.sendWouldBlock(queued: mark - 1), .resumeClient),
                (.clientBytes, .send), (blockedFull, .pauseClient),
                (.upstreamWritable, .send), (.sendDrained, .stopWatchingWritable(resumeClient: true)),
                (.upstreamWritable, .none), (.clientBytes, .send), (.sendDrained, .none),
            ]
        ),
        (
            "a slow client stops the upstream's reading until it takes its bytes",
            [
                (.upstreamReadable, .receive), (.receiveWouldBlock, .watchReadable),
                (.upstreamReadable, .receive), (.clientFull, .stopWatchingReadable),
                (.clientWritable, .receive), (.clientFull, .none),
                (.clientWritable, .receive), (.receiveWouldBlock, .watchReadable),
            ]
        ),
        (
            "an upstream that fails while the client's bytes go out aborts the tunnel",
            [
                (.clientBytes, .send), (blockedFull, .watchWritable(pauseClient: true)), (.upstreamWritable, .send),
                (.upstreamFailed, .abort),
                (.upstreamWritable, .none), (.clientWritable, .none), (.upstreamFailed, .none), (.close, .none),
            ]
        ),
        (
            "an upstream that fails while its bytes come in aborts the tunnel",
            [
                (.upstreamReadable, .receive), (.upstreamFailed, .abort),
                (.clientBytes, .none), (.upstreamReadable, .none), (.close, .none),
            ]
        ),
        (
            // A write to the client fails inside the receive loop: the exchange closes, its
            // owner closes the pump, and the loop then finds the client taking nothing.
            "a client that fails during a receive closes the tunnel",
            [
                (.upstreamReadable, .receive), (.close, .close), (.clientFull, .none),
                (.upstreamReadable, .none), (.clientEnd, .none), (.close, .none),
            ]
        ),
        (
            "a client that leaves while both sides wait closes the tunnel once",
            [
                (.clientBytes, .send), (blockedLow, .watchWritable(pauseClient: false)),
                (.upstreamReadable, .receive), (.receiveWouldBlock, .watchReadable),
                (.close, .close), (.upstreamWritable, .none), (.upstreamReadable, .none), (.sendDrained, .none),
                (.upstreamEnded, .none), (.close, .none),
            ]
        ),
    ]

    @Test(arguments: walks.map(\.0))
    func walk(_ name: String) throws {
        let steps = try #require(Self.walks.first { $0.0 == name }).1
        var machine = TunnelPumpStateMachine()
        for (index, (event, expected)) in steps.enumerated() {
            let action = Self.apply(event, to: &machine)
            #expect(action == expected, "step \(index + 1): \(event)")
        }
    }
}
