import Testing

@testable import TokenProxyServer
@testable import TokenProxySupport

struct ConnectionStateMachineTests {
    @Test func keepAliveCycle() {
        var machine = ConnectionStateMachine()
        let step1 = machine.accepted()
        #expect(step1 == .arm(.header))
        let step2 = machine.headBytesReceived()
        #expect(step2 == .arm(.header))
        let step3 = machine.headReceived(keepAlive: true, hasBody: true)
        #expect(step3 == .arm(.body))
        let step4 = machine.requestEnded()
        #expect(step4 == .arm(.none))
        let step5 = machine.responseStarted(closeRequested: false)
        #expect(step5)
        let step6 = machine.responseFinished()
        #expect(step6 == .parseBuffered(.idle))
        #expect(machine.isIdle)
    }

    @Test func clientCloseRequestEndsTheConnection() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: false, hasBody: false)
        let step7 = machine.responseStarted(closeRequested: false)
        #expect(!step7)
        let step8 = machine.responseFinished()
        #expect(step8 == .closeAfterFlush)
    }

    @Test func aResponseFinishedBeforeTheBodyWasReadCloses() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: true)
        _ = machine.bodyRequested()
        let step9 = machine.responseStarted(closeRequested: false)
        #expect(step9)
        let step10 = machine.responseFinished()
        #expect(step10 == .closeAfterFlush)
    }

    @Test func headerTimeoutWithPartialHeadAnswers408() {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        _ = machine.headBytesReceived()
        let step11 = machine.requestDeadlinePassed()
        #expect(step11 == .respondTimeoutAndClose)
    }

    @Test func headerTimeoutWithNothingReceivedClosesQuietly() {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        let step12 = machine.requestDeadlinePassed()
        #expect(step12 == .closeNow)
    }

    @Test func idleTimeoutClosesQuietly() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        _ = machine.responseStarted(closeRequested: false)
        _ = machine.responseFinished()
        let step13 = machine.requestDeadlinePassed()
        #expect(step13 == .closeNow)
    }

    @Test func bodyTimeoutBeforeTheResponseAnswers408AfterItAborts() {
        var before = ConnectionStateMachine()
        _ = before.headReceived(keepAlive: true, hasBody: true)
        let step14 = before.requestDeadlinePassed()
        #expect(step14 == .respondTimeoutAndClose)

        var after = ConnectionStateMachine()
        _ = after.headReceived(keepAlive: true, hasBody: true)
        _ = after.responseStarted(closeRequested: false)
        let step15 = after.requestDeadlinePassed()
        #expect(step15 == .closeNow)
    }

    @Test func endOfInputDuringAnExchangeAbortsIt() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        let step16 = machine.inputEnded()
        #expect(step16 == .closeNow)
        #expect(machine.isClosed)
        let step17 = machine.responseStarted(closeRequested: false)
        #expect(!step17)
        let step18 = machine.responseFinished()
        #expect(step18 == .none)
    }

    @Test func eofInsideABodyClosesAtOnce() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: true)
        let step19 = machine.inputEnded()
        #expect(step19 == .closeNow)
    }

    @Test func drainClosesIdleAndEndsBusyAfterTheirExchange() {
        var idle = ConnectionStateMachine()
        let step20 = idle.drain()
        #expect(step20 == .closeNow)

        var busy = ConnectionStateMachine()
        _ = busy.headReceived(keepAlive: true, hasBody: false)
        let step21 = busy.drain()
        #expect(step21 == .none)
        let step22 = busy.responseStarted(closeRequested: false)
        #expect(!step22)
        let step23 = busy.responseFinished()
        #expect(step23 == .closeAfterFlush)
    }

    @Test func rejectionClosesAfterTheAnswer() {
        var machine = ConnectionStateMachine()
        _ = machine.headBytesReceived()
        let error = ProxyError(.badRequest, "broken")
        let step24 = machine.requestMalformed(error)
        #expect(step24 == .rejectRequest(error))
        #expect(machine.isClosing)
    }
}
