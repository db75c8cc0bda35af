import Testing

@testable import TokenProxyCore

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
        let step9 = machine.responseStarted(closeRequested: false)
        #expect(step9)
        let step10 = machine.responseFinished()
        #expect(step10 == .closeAfterFlush)
    }

    @Test func headerTimeoutWithPartialHeadAnswers408() {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        _ = machine.headBytesReceived()
        let step11 = machine.timerFired(.header)
        #expect(step11 == .respondTimeoutAndClose)
    }

    @Test func headerTimeoutWithNothingReceivedClosesQuietly() {
        var machine = ConnectionStateMachine()
        _ = machine.accepted()
        let step12 = machine.timerFired(.header)
        #expect(step12 == .closeNow)
    }

    @Test func idleTimeoutClosesQuietly() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        _ = machine.responseStarted(closeRequested: false)
        _ = machine.responseFinished()
        let step13 = machine.timerFired(.idle)
        #expect(step13 == .closeNow)
    }

    @Test func bodyTimeoutBeforeTheResponseAnswers408AfterItAborts() {
        var before = ConnectionStateMachine()
        _ = before.headReceived(keepAlive: true, hasBody: true)
        let step14 = before.timerFired(.body)
        #expect(step14 == .respondTimeoutAndClose)

        var after = ConnectionStateMachine()
        _ = after.headReceived(keepAlive: true, hasBody: true)
        _ = after.responseStarted(closeRequested: false)
        let step15 = after.timerFired(.body)
        #expect(step15 == .closeNow)
    }

    @Test func halfCloseAfterACompleteRequestStillGetsTheAnswer() {
        var machine = ConnectionStateMachine()
        _ = machine.headReceived(keepAlive: true, hasBody: false)
        let step16 = machine.inputEnded()
        #expect(step16 == .none)
        let step17 = machine.responseStarted(closeRequested: false)
        #expect(!step17)
        let step18 = machine.responseFinished()
        #expect(step18 == .closeAfterFlush)
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
        let step24 = machine.requestRejected()
        #expect(step24 == .closeAfterFlush)
        #expect(machine.isClosing)
    }
}

struct ResponseEncoderTests {
    private func encode(
        _ head: HTTPResponseHead,
        version: HTTPVersion = .http1_1,
        isHead: Bool = false,
        keepAlive: Bool = true
    ) -> (String, Bool, ResponseEncoder) {
        var encoder = ResponseEncoder()
        var keep = keepAlive
        let bytes = encoder.encodeHead(head, requestVersion: version, requestIsHead: isHead, keepAlive: &keep)
        return (String(decoding: bytes, as: UTF8.self), keep, encoder)
    }

    @Test func knownLengthUsesContentLength() {
        var (text, keep, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 5))
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
        #expect(keep)
        var body: [UInt8] = []
        encoder.encodeBody(Array("hello".utf8), into: &body)
        encoder.encodeEnd(into: &body)
        #expect(body == Array("hello".utf8))
    }

    @Test func bytesPastTheAnnouncedLengthAreNotEncoded() {
        var (_, _, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 5))
        var body: [UInt8] = []
        #expect(encoder.encodeBody(Array("hel".utf8), into: &body) == .accepted)
        #expect(!encoder.isBodyComplete)
        #expect(encoder.encodeBody(Array("loEXTRA".utf8), into: &body) == .exceedsLength)
        #expect(body == Array("hello".utf8))
        #expect(encoder.isBodyComplete)
    }

    @Test func unknownLengthIsChunkedForHTTP11() {
        var (text, _, encoder) = self.encode(HTTPResponseHead(status: 200))
        #expect(text.contains("Transfer-Encoding: chunked\r\n"))
        var body: [UInt8] = []
        encoder.encodeBody(Array("0123456789abcdefX".utf8), into: &body)
        encoder.encodeBody([UInt8](), into: &body)
        encoder.encodeEnd(into: &body)
        #expect(String(decoding: body, as: UTF8.self) == "11\r\n0123456789abcdefX\r\n0\r\n\r\n")
    }

    @Test func unknownLengthForHTTP10EndsWithTheConnection() {
        let (text, keep, _) = self.encode(HTTPResponseHead(status: 200), version: .http1_0)
        #expect(!keep)
        #expect(text.contains("Connection: close\r\n"))
        #expect(!text.contains("Transfer-Encoding"))
    }

    @Test func headAnswersKeepTheLengthButSendNoBody() {
        var (text, _, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 42), isHead: true)
        #expect(text.contains("Content-Length: 42\r\n"))
        var body: [UInt8] = []
        encoder.encodeBody(Array("x".utf8), into: &body)
        #expect(body.isEmpty)
    }

    @Test func noContentHasNoFraming() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 204))
        #expect(!text.contains("Content-Length"))
        #expect(!text.contains("Transfer-Encoding"))
    }

    @Test func framingAndUnsafeFieldsFromHandlersAreDropped() {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "999")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Connection", value: "keep-alive")
        headers.add(name: "X-Split", value: "a\r\nInjected: yes")
        headers.add(name: "Bad Name", value: "v")
        headers.add(name: "X-Fine", value: "ok")
        let (text, _, _) = self.encode(HTTPResponseHead(status: 200, headers: headers, contentLength: 0))
        #expect(text == "HTTP/1.1 200 OK\r\nX-Fine: ok\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func closingConnectionsAnnounceIt() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 200, contentLength: 0), keepAlive: false)
        #expect(text.hasSuffix("Connection: close\r\n\r\n"))
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 65535, 1_048_576, Int64.max])
    func numbersAreWrittenInDecimalAndHex(value: Int64) {
        var decimal: [UInt8] = []
        ResponseEncoder.appendDigits(value, to: &decimal)
        #expect(String(decoding: decimal, as: UTF8.self) == String(value))
        var hex: [UInt8] = []
        ResponseEncoder.appendDigits(value, radix: 16, to: &hex)
        #expect(String(decoding: hex, as: UTF8.self) == String(value, radix: 16))
    }

    @Test func aLargeLengthAndAnUnusualStatusAreWrittenExactly() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 599, contentLength: 8_589_934_592))
        #expect(text == "HTTP/1.1 599 Unknown\r\nContent-Length: 8589934592\r\n\r\n")
    }
}

struct HeaderNameSetTests {
    @Test func membersMatchIgnoringCaseAndOthersDoNot() {
        let set = HeaderNameSet([
            "connection", "te", "x-a-name-longer-than-sixty-three-bytes-that-shares-the-last-length-bit",
        ])
        #expect(set.contains("Connection"))
        #expect(set.contains("TE"))
        #expect(set.contains("X-A-Name-Longer-Than-Sixty-Three-Bytes-That-Shares-The-Last-Length-Bit"))
        #expect(!set.contains("Connectio"))
        #expect(!set.contains("tf"))
        #expect(!set.contains(""))
        // Longer names share the last length bit, so they are compared in full.
        #expect(!set.contains("x-a-name-longer-than-sixty-three-bytes-that-shares-the-last-length-bit-too"))
    }
}
