import Testing

@testable import TokenProxyServer
@testable import TokenProxySupport

/// The connection's state machine once an exchange upgraded it: bytes unparsed, the tunnel's
/// deadline, each side's end, pausing, the end of the tunnel.
struct TunnelStateMachineTests {
    /// A machine whose exchange (a GET without a body) was answered with 101.
    private func upgraded() -> ConnectionStateMachine {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        let action = machine.upgraded()
        #expect(action == .arm(.tunnel))
        #expect(machine.isTunnel)
        return machine
    }

    @Test func inputWaitsUntilTheExchangeReadsThenGoesUnparsed() {
        var machine = self.upgraded()
        #expect(machine.expectedInput == .nothing, "no reader yet: bytes stay buffered")
        let step1 = machine.bodyRequested()
        #expect(step1 == .deliverTunnelInput)
        #expect(machine.expectedInput == .tunnel)
        let step2 = machine.bytesReceived()
        #expect(step2 == .armAndParse(.tunnel), "every byte restarts the idle deadline")
        let step3 = machine.bodyRequested()
        #expect(step3 == .none, "asking twice changes nothing")
    }

    @Test func aPausedTunnelIsNotReadAndResumesWithWhatIsBuffered() {
        var machine = self.upgraded()
        _ = machine.bodyRequested()
        _ = machine.readInterest(inputBufferFull: false)
        #expect(machine.isReading)
        let step4 = machine.bodyPaused()
        #expect(step4 == .none)
        #expect(machine.expectedInput == .nothing)
        let step5 = machine.readInterest(inputBufferFull: false)
        #expect(step5 == .pauseReading)
        let step6 = machine.bodyResumed()
        #expect(step6 == .deliverTunnelInput)
        let step7 = machine.readInterest(inputBufferFull: false)
        #expect(step7 == .resumeReading)
        let step8 = machine.readInterest(inputBufferFull: true)
        #expect(step8 == .pauseReading, "a full buffer stops reading too")
    }

    @Test func theClientsEndIsDeliveredOnceAfterItsBytes() {
        var machine = self.upgraded()
        _ = machine.bodyRequested()
        let step9 = machine.inputEnded()
        #expect(step9 == .deliverTunnelInput, "a half-close, not the connection's end")
        #expect(!machine.isClosed)
        let step10 = machine.takeTunnelInputEnd()
        #expect(step10)
        let step11 = machine.takeTunnelInputEnd()
        #expect(!step11, "delivered once")
        let step12 = machine.readInterest(inputBufferFull: false)
        #expect(step12 == .none, "never resumed after the end")
    }

    @Test func anEndBeforeTheReaderWaitsForIt() {
        var machine = self.upgraded()
        _ = machine.inputEnded()
        let step13 = machine.takeTunnelInputEnd()
        #expect(!step13, "no reader yet")
        _ = machine.bodyRequested()
        let step14 = machine.takeTunnelInputEnd()
        #expect(step14)
    }

    @Test func anEndBeforeTheUpgradeLeavesNoTunnel() {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        let ended = machine.inputEnded()
        #expect(ended == .closeNow)
        let upgrade = machine.upgraded()
        #expect(upgrade == .none)
        #expect(!machine.isTunnel)
    }

    @Test func theClientsEndStaysDeliveredWhenReportedAgain() {
        var machine = self.upgraded()
        _ = machine.bodyRequested()
        _ = machine.inputEnded()
        let first = machine.takeTunnelInputEnd()
        #expect(first)
        let again = machine.inputEnded()
        #expect(again == .deliverTunnelInput)
        let second = machine.takeTunnelInputEnd()
        #expect(!second, "delivered once")
    }

    @Test func theOtherSidesEndShutsOurSendingSideOnceTheOutputDrained() {
        var machine = self.upgraded()
        let step15 = machine.writeWouldBlock()
        #expect(step15 == .waitForWritable)
        let step16 = machine.tunnelOutputEnded()
        #expect(step16 == .shutdownOutputWhenDrained)
        let step17 = machine.tunnelOutputEnded()
        #expect(step17 == .none, "once")
        let step18 = machine.outputDrained()
        #expect(step18 == .shutdownOutput(stopWaitingForWritable: true))
        let step19 = machine.outputDrained()
        #expect(step19 == .none, "shut once")
        #expect(!machine.isClosed, "the client may go on sending")
    }

    @Test func anIdleTunnelClosesAndFinishingClosesAfterTheOutput() {
        var idle = self.upgraded()
        let step20 = idle.requestDeadlinePassed()
        #expect(step20 == .closeNow)
        #expect(idle.isClosed)

        var finished = self.upgraded()
        let step21 = finished.responseFinished()
        #expect(step21 == .closeAfterFlush, "a tunnel never goes back to HTTP")
        #expect(finished.isClosing)

        var aborted = self.upgraded()
        let step22 = aborted.exchangeAborted()
        #expect(step22 == .flushAndClose)
    }

    @Test func drainLeavesATunnelToItsSidesAndFailureClosesIt() {
        var machine = self.upgraded()
        let step23 = machine.drain()
        #expect(step23 == .none)
        #expect(machine.isTunnel)
        let step24 = machine.headReceived(keepAlive: true, hasBody: false)
        #expect(step24 == .none, "no HTTP after an upgrade")
        let step25 = machine.failed()
        #expect(step25 == .closeNow)
    }

    @Test func onlyAnActiveExchangeCanUpgrade() {
        var machine = ConnectionStateMachine()
        let step26 = machine.upgraded()
        #expect(step26 == .none)
        #expect(!machine.isTunnel)
    }
}
