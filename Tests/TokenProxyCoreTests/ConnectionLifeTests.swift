import Testing

@testable import TokenProxyServer
@testable import TokenProxySupport

/// Table-driven walks through the connection's life: each step is an event and what the
/// state machine must answer to it.
struct ConnectionLifeTests {
    typealias Action = ConnectionStateMachine.Action

    /// An event the connection feeds the state machine, or a look at what it expects to parse.
    enum Event: Sendable {
        case accepted, bytes, headBytes, bodyEnded, eof
        case head(keepAlive: Bool = true, body: Bool = false, continue: Bool = false)
        case malformed
        case readBody, pauseBody, resumeBody
        case responseStarted(close: Bool = false)
        case responseEndsWithTheConnection
        case responseFinished, aborted
        case inputDeadline, sendDeadline, lingerDeadline
        case drain, failed
        case readInterest(full: Bool = false)
        case wouldBlock, wrote, drained
        case expectedInput
    }

    /// What the state machine answered.
    enum Answer: Sendable, Equatable {
        case action(Action)
        case keepAlive(Bool)
        case expects(ConnectionStateMachine.ExpectedInput)
    }

    /// A named list of steps.
    struct Walk: Sendable, CustomTestStringConvertible {
        let name: String
        let steps: [(Event, Answer)]
        var testDescription: String { self.name }
    }

    static let error = ProxyError(.badRequest, "broken framing")

    static func apply(_ event: Event, to machine: inout ConnectionStateMachine) -> Answer {
        switch event {
        case .accepted: return .action(machine.accepted())
        case .bytes: return .action(machine.bytesReceived())
        case .headBytes: return .action(machine.headBytesReceived())
        case .head(let keepAlive, let body, let expectsContinue):
            return .action(machine.headReceived(keepAlive: keepAlive, hasBody: body, expectsContinue: expectsContinue))
        case .bodyEnded: return .action(machine.requestEnded())
        case .eof: return .action(machine.inputEnded())
        case .malformed: return .action(machine.requestMalformed(Self.error))
        case .readBody: return .action(machine.bodyRequested())
        case .pauseBody: return .action(machine.bodyPaused())
        case .resumeBody: return .action(machine.bodyResumed())
        case .responseStarted(let close): return .keepAlive(machine.responseStarted(closeRequested: close))
        case .responseEndsWithTheConnection:
            machine.responseEndsWithTheConnection()
            return .action(.none)
        case .responseFinished: return .action(machine.responseFinished())
        case .aborted: return .action(machine.exchangeAborted())
        case .inputDeadline: return .action(machine.requestDeadlinePassed())
        case .sendDeadline: return .action(machine.sendDeadlinePassed())
        case .lingerDeadline: return .action(machine.lingerDeadlinePassed())
        case .drain: return .action(machine.drain())
        case .failed: return .action(machine.failed())
        case .readInterest(let full): return .action(machine.readInterest(inputBufferFull: full))
        case .wouldBlock: return .action(machine.writeWouldBlock())
        case .wrote: return .action(machine.bytesWritten())
        case .drained: return .action(machine.outputDrained())
        case .expectedInput: return .expects(machine.expectedInput)
        }
    }

    static let walks: [Walk] = [
        Walk(
            name: "pipelined requests wait for the answer before them",
            steps: [
                (.accepted, .action(.arm(.header))), (.readInterest(), .action(.resumeReading)),
                (.bytes, .action(.parse)), (.head(), .action(.arm(.none))),
                (.expectedInput, .expects(.nothing)), (.readInterest(full: true), .action(.pauseReading)),
                (.readBody, .action(.deliverEnd)), (.readBody, .action(.none)),
                (.responseStarted(), .keepAlive(true)), (.responseFinished, .action(.parseBuffered(.idle))),
                (.expectedInput, .expects(.head)), (.readInterest(), .action(.resumeReading)),
                (.head(keepAlive: false), .action(.arm(.none))), (.responseStarted(), .keepAlive(false)),
                (.responseFinished, .action(.closeAfterFlush)), (.expectedInput, .expects(.nothing)),
                (.drained, .action(.beginLingeringClose(stopWaitingForWritable: false))),
            ]
        ),
        Walk(
            name: "the idle deadline waits while the last answer still goes out",
            steps: [
                (.accepted, .action(.arm(.header))), (.head(), .action(.arm(.none))),
                (.responseStarted(), .keepAlive(true)), (.wouldBlock, .action(.waitForWritable)),
                (.responseFinished, .action(.parseBuffered(.idle))),
                (.inputDeadline, .action(.arm(.idle))), (.wrote, .action(.armSendDeadline)),
                (.drained, .action(.stopWaitingForWritable)), (.inputDeadline, .action(.closeNow)),
            ]
        ),
        Walk(
            name: "a drain lets the last answer still going out finish, then closes",
            steps: [
                (.accepted, .action(.arm(.header))), (.head(), .action(.arm(.none))),
                (.responseStarted(), .keepAlive(true)), (.wouldBlock, .action(.waitForWritable)),
                (.responseFinished, .action(.parseBuffered(.idle))), (.drain, .action(.closeAfterFlush)),
                (.drained, .action(.beginLingeringClose(stopWaitingForWritable: true))),
            ]
        ),
        Walk(
            name: "100 Continue goes out once, when the body is first asked for",
            steps: [
                (.head(body: true, continue: true), .action(.arm(.body))), (.expectedInput, .expects(.nothing)),
                (.readBody, .action(.sendContinue)), (.expectedInput, .expects(.body)),
                (.pauseBody, .action(.none)), (.expectedInput, .expects(.nothing)),
                (.resumeBody, .action(.parse)), (.bytes, .action(.armAndParse(.body))),
                (.bodyEnded, .action(.deliverEnd)), (.bytes, .action(.parse)),
                (.responseStarted(), .keepAlive(true)), (.responseFinished, .action(.parseBuffered(.idle))),
            ]
        ),
        Walk(
            name: "no 100 Continue once the response started, and the unread body closes",
            steps: [
                (.head(body: true, continue: true), .action(.arm(.body))), (.responseStarted(), .keepAlive(false)),
                (.readBody, .action(.parse)), (.responseFinished, .action(.closeAfterFlush)),
            ]
        ),
        Walk(
            name: "no 100 Continue for a request without a body",
            steps: [(.head(continue: true), .action(.arm(.none))), (.readBody, .action(.deliverEnd))]
        ),
        Walk(
            name: "an error answer is followed by a lingering close",
            steps: [
                (.accepted, .action(.arm(.header))), (.readInterest(), .action(.resumeReading)),
                (.bytes, .action(.parse)), (.headBytes, .action(.arm(.header))), (.headBytes, .action(.none)),
                (.malformed, .action(.rejectRequest(Self.error))), (.expectedInput, .expects(.nothing)),
                (.malformed, .action(.none)), (.wouldBlock, .action(.waitForWritable)),
                (.wouldBlock, .action(.none)), (.wrote, .action(.armSendDeadline)),
                (.drained, .action(.beginLingeringClose(stopWaitingForWritable: true))),
                (.readInterest(full: true), .action(.none)), (.bytes, .action(.discardInput)),
                (.wouldBlock, .action(.none)), (.inputDeadline, .action(.none)), (.eof, .action(.closeNow)),
                (.readInterest(), .action(.none)), (.failed, .action(.none)),
            ]
        ),
        Walk(
            name: "a lingering close ends at its deadline",
            steps: [
                (.headBytes, .action(.arm(.header))), (.inputDeadline, .action(.respondTimeoutAndClose)),
                (.lingerDeadline, .action(.none)),
                (.drained, .action(.beginLingeringClose(stopWaitingForWritable: false))),
                (.lingerDeadline, .action(.closeNow)), (.lingerDeadline, .action(.none)),
            ]
        ),
        Walk(
            name: "a paused body stops reading until it resumes or ends",
            steps: [
                (.readInterest(), .action(.resumeReading)), (.head(body: true), .action(.arm(.body))),
                (.pauseBody, .action(.none)), (.readInterest(), .action(.pauseReading)),
                (.readBody, .action(.parse)), (.expectedInput, .expects(.nothing)),
                (.resumeBody, .action(.parse)), (.readInterest(), .action(.resumeReading)),
                (.readInterest(full: true), .action(.pauseReading)), (.readInterest(), .action(.resumeReading)),
                (.pauseBody, .action(.none)), (.readInterest(), .action(.pauseReading)),
                (.resumeBody, .action(.parse)), (.bodyEnded, .action(.deliverEnd)),
                (.pauseBody, .action(.none)), (.readInterest(), .action(.resumeReading)),
            ]
        ),
        Walk(
            name: "the send deadline drops a client that takes nothing",
            steps: [
                (.readInterest(), .action(.resumeReading)), (.head(), .action(.arm(.none))),
                (.responseStarted(), .keepAlive(true)), (.wrote, .action(.none)),
                (.wouldBlock, .action(.waitForWritable)), (.wrote, .action(.armSendDeadline)),
                (.drained, .action(.stopWaitingForWritable)), (.drained, .action(.none)),
                (.wouldBlock, .action(.waitForWritable)), (.sendDeadline, .action(.closeNow)),
                (.sendDeadline, .action(.none)), (.readInterest(full: true), .action(.none)),
                (.wouldBlock, .action(.none)), (.responseFinished, .action(.none)),
            ]
        ),
        Walk(
            name: "a client closing during its exchange aborts it",
            steps: [
                (.readInterest(), .action(.resumeReading)), (.head(), .action(.arm(.none))),
                (.eof, .action(.closeNow)), (.responseStarted(), .keepAlive(false)),
                (.responseFinished, .action(.none)),
            ]
        ),
        Walk(
            name: "a half-close between requests closes at once",
            steps: [(.eof, .action(.closeNow)), (.head(), .action(.none)), (.drain, .action(.none))]
        ),
        Walk(
            name: "a half-close inside a body closes at once",
            steps: [(.head(body: true), .action(.arm(.body))), (.eof, .action(.closeNow)), (.readBody, .action(.none))]
        ),
        Walk(
            name: "an error inside the body before the response is answered",
            steps: [
                (.head(body: true), .action(.arm(.body))), (.readBody, .action(.parse)),
                (.bytes, .action(.armAndParse(.body))), (.malformed, .action(.rejectRequest(Self.error))),
                (.responseStarted(), .keepAlive(false)),
                (.drained, .action(.beginLingeringClose(stopWaitingForWritable: false))),
            ]
        ),
        Walk(
            name: "an error inside the body after the response started aborts the exchange",
            steps: [
                (.head(body: true), .action(.arm(.body))), (.readBody, .action(.parse)),
                (.responseStarted(), .keepAlive(true)), (.malformed, .action(.abortExchange)),
                (.aborted, .action(.flushAndClose)), (.aborted, .action(.none)), (.failed, .action(.closeNow)),
            ]
        ),
        Walk(
            name: "the body deadline closes at once after the response started",
            steps: [
                (.head(body: true), .action(.arm(.body))), (.responseStarted(), .keepAlive(false)),
                (.inputDeadline, .action(.closeNow)), (.eof, .action(.none)),
            ]
        ),
        Walk(
            name: "an answer whose framing ends with the connection closes it",
            steps: [
                (.head(), .action(.arm(.none))), (.responseStarted(), .keepAlive(true)),
                (.responseEndsWithTheConnection, .action(.none)), (.responseFinished, .action(.closeAfterFlush)),
            ]
        ),
        Walk(
            name: "draining lets a half-received head and an exchange finish, then closes",
            steps: [
                (.headBytes, .action(.arm(.header))), (.drain, .action(.none)),
                (.head(), .action(.arm(.none))), (.responseStarted(), .keepAlive(false)),
                (.responseFinished, .action(.closeAfterFlush)),
            ]
        ),
    ]

    @Test(arguments: Self.walks)
    func walk(_ walk: Walk) {
        var machine = ConnectionStateMachine()
        for (index, (event, expected)) in walk.steps.enumerated() {
            let answer = Self.apply(event, to: &machine)
            #expect(answer == expected, "step \(index): \(event)")
        }
    }
}
