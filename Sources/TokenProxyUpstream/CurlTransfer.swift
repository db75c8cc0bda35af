import CCurl
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One request to an upstream: a libcurl easy handle, its callbacks, and the flow control
/// between the client connection's queue and the engine thread.
///
/// Ownership: the engine keeps the transfer alive (strongly, in its table) from `add` until
/// it is finished or cancelled; libcurl's userdata pointers are unretained references to it,
/// valid for exactly that span, since the easy handle is removed and cleaned up first.
///
/// Threads: the `let` fields are set at init and never change; the `var` fields are touched
/// only on the engine's thread; ``Shared`` is the state both sides touch, behind its mutex.
/// That makes `@unchecked Sendable` sound.
package final class CurlTransfer: @unchecked Sendable {
    /// TLS, protocol and timeout settings taken from the route and the limits.
    package typealias Options = CurlRequestSetup.Options

    /// What the client's side and the engine share, behind `shared`'s mutex: the request
    /// body not yet handed to libcurl, and the flow control of both directions.
    private struct Shared {
        var body = ByteQueue(compactionThreshold: TransferFlowControl.bodyHighMark)
        var flow = TransferFlowControl()
    }

    /// The request and its options, as the easy handle is set up from them: kept in the form
    /// the set-up reads, rather than copied into it when the transfer starts.
    let setup: CurlRequestSetup
    /// The request to send.
    package var request: UpstreamRequest { self.setup.request }
    /// Where the response goes: a client exchange, or a buffer for the proxy's own requests.
    let sink: any CurlResponseSink
    let requestIsHead: Bool
    /// Route and provider names for error messages.
    let route: String?
    let provider: String?

    /// Guarded by its own mutex; read and written on both sides.
    private let shared = Mutex(Shared())
    /// The engine that runs the transfer (``CurlEngine/add(_:)``), given at init: the
    /// client's side asks it for resumes from the connection's queue while the engine's
    /// thread prepares the transfer, so it never changes.
    let engine: CurlEngine

    /// The easy handle while the engine runs the transfer (engine thread only).
    private(set) var easy: CurlEasy?
    /// The request's header list for libcurl (engine thread only).
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// libcurl's error message buffer (engine thread only).
    private var errorBuffer: UnsafeMutablePointer<CChar>?
    /// The response head being read (engine thread only).
    private var parser = UpstreamResponseParser()
    /// What was collected for the client since the last delivery (engine thread only).
    private var outbox = CurlDelivery()
    /// Request body bytes handed to libcurl: with a known length, libcurl stops reading once
    /// it has them all, so the last of them, not a read at the end, marks the request sent.
    private var bodyBytesRead: Int64 = 0  // engine thread only
    /// How far the transfer got, and its deadline (engine thread only).
    private var life: TransferStateMachine
    /// The transfer's slot in its engine's ``TransferTable``, -1 outside it (engine thread only).
    var tableSlot = -1

    /// A transfer of `request` that `engine` will run once given it (``CurlEngine/add(_:)``).
    package init(
        engine: CurlEngine,
        request: UpstreamRequest,
        options: Options,
        sink: any CurlResponseSink,
        route: String?,
        provider: String?
    ) {
        self.engine = engine
        self.setup = CurlRequestSetup(request: request, options: options)
        self.sink = sink
        self.requestIsHead = request.method == "HEAD"
        self.route = route
        self.provider = provider
        self.life = TransferStateMachine(
            resendable: options.resendable,
            firstByteLimit: CurlRequestSetup.milliseconds(options.firstByteTimeout),
            idleLimit: options.idleTimeout.map { CurlRequestSetup.milliseconds($0) }
        )
        if case .length(0) = request.body {
            // An announced empty body: nothing will be appended, so it is complete already.
            self.shared.withLockedValue { _ = $0.flow.bodyEnded() }
        }
    }

    /// When the engine ends the transfer (engine thread): the first-byte deadline until the
    /// response head arrived (a miss is 504), then the idle deadline (a miss aborts the client).
    var deadline: MonotonicTime? { self.life.deadline }

    // MARK: Client side (the exchange's queue)

    /// Adds request body bytes; returns true when enough is buffered that the producer should
    /// pause until ``CurlResponseSink/resumeRequestBody()``.
    package func appendBody(_ bytes: [UInt8]) -> Bool {
        let (resume, pauseProducer) = self.shared.withLockedValue { shared -> (Bool, Bool) in
            shared.body.append(contentsOf: bytes)
            return shared.flow.bodyAppended(bytes.count)
        }
        if resume {
            self.engine.resume(self)
        }
        return pauseProducer
    }

    /// Marks the request body complete.
    package func endBody() {
        let resume = self.shared.withLockedValue { $0.flow.bodyEnded() }
        if resume {
            self.engine.resume(self)
        }
    }

    // MARK: Engine thread

    /// Creates and configures the easy handle; nil (after answering the client) on failure.
    func prepare() -> CurlEasy? {
        guard let easy = self.engine.takeEasyHandle() else {
            self.fail(
                ProxyError(.upstreamUnreachable, "cannot create a transfer", route: self.route, provider: self.provider)
            )
            return nil
        }
        self.easy = easy
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        self.errorBuffer = buffer

        var (ok, headers) = self.setup.configure(easy)
        self.headerList = headers
        func set(_ accepted: Bool) {
            if !accepted { ok = false }
        }
        set(easy.set(CURLOPT_PRIVATE, pointer: userdata))
        set(easy.set(CURLOPT_ERRORBUFFER, pointer: buffer))
        set(easy.setWriteCallback(curlWriteCallback))
        set(easy.set(CURLOPT_WRITEDATA, pointer: userdata))
        set(easy.setHeaderCallback(curlHeaderCallback))
        set(easy.set(CURLOPT_HEADERDATA, pointer: userdata))
        set(easy.setOpenSocketCallback(curlOpenSocketCallback))
        set(easy.setPrerequestCallback(curlPrerequestCallback))
        set(easy.set(CURLOPT_PREREQDATA, pointer: userdata))
        if self.setup.uploadsBody {
            set(easy.setReadCallback(curlReadCallback))
            set(easy.set(CURLOPT_READDATA, pointer: userdata))
        }
        guard ok else {
            self.fail(
                ProxyError(
                    .upstreamUnreachable,
                    "cannot configure the upstream request",
                    route: self.route,
                    provider: self.provider
                )
            )
            self.release()
            return nil
        }
        // An announced empty body (`Content-Length: 0`) is never asked for by libcurl: the
        // request is sent with its head, and the first-byte deadline starts now.
        self.report(self.life.prepared(sendsBody: self.setup.request.body.sendsBytes, now: .now))
        return easy
    }

    /// Tells the engine of a deadline just armed.
    private func report(_ deadline: MonotonicTime?) {
        if let deadline {
            self.engine.deadlineSet(deadline)
        }
    }

    /// Continues a paused transfer; a response body waiting for its client counts as idle
    /// again from now.
    func unpause() {
        self.report(self.life.resumed(now: .now))
        self.easy?.unpause()
    }

    /// Gives the easy handle back to the engine for the next transfer; called after it was
    /// removed from the multi handle.
    func release() {
        if let easy = self.easy {
            self.engine.recycle(easy)
            self.easy = nil
        }
        curl_slist_free_all(self.headerList)
        self.headerList = nil
        self.errorBuffer?.deallocate()
        self.errorBuffer = nil
    }

    /// Reports the end of the transfer to the client: the engine's deadline passed
    /// (`result` nil), or libcurl ended it with `result`.
    func complete(result: CURLcode?) {
        let ending: TransferStateMachine.Ending?
        if let result {
            ending = self.life.completed(self.classify(result))
        } else {
            ending = self.life.deadlinePassed()
        }
        switch ending {
        case .finish?:
            self.post(end: .finish)
        case .abort?:
            self.post(end: .abort)
        case .timeout?:
            self.post(end: .fail(self.timeoutError()))
        case .headRefused(let error)?:
            self.post(end: .fail(error))
        case .secondSendStopped?:
            let error = ProxyError(
                .upstreamUnreachable,
                "the upstream closed the kept-alive connection before answering; a \(self.setup.request.method) "
                    + "request is not sent twice",
                route: self.route,
                provider: self.provider
            )
            self.post(end: .fail(error))
        case .unreachable?, .lostReusedConnection?:
            let error = ProxyError(
                .upstreamUnreachable,
                self.errorMessage(result ?? CURLE_OK),
                route: self.route,
                provider: self.provider
            )
            self.post(end: ending == .lostReusedConnection ? .lostReusedConnection(error) : .fail(error))
        case nil:
            break
        }
    }

    /// What `result` means for the client's answer. A connection failure counts as on a
    /// reused connection when it came from the cache: libcurl itself sends the request again
    /// on a new connection when sending the head fails, or receiving fails or ends with
    /// nothing, but not when sending fails later (the rest of a large head, the body).
    private func classify(_ result: CURLcode) -> TransferStateMachine.Result {
        switch result {
        case CURLE_OK:
            return .ok
        case CURLE_ABORTED_BY_CALLBACK:
            return .stoppedByCallback
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut(requestSent: self.easy?.sentRequest == true)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING:
            return .connectionFailed(reused: self.easy?.reusedConnection == true)
        case CURLE_SEND_FAIL_REWIND:
            return .rewindFailed
        default:
            return .other
        }
    }

    /// 504 `upstream_timeout`: no response head in time.
    private func timeoutError() -> ProxyError {
        ProxyError(.upstreamTimeout, "the upstream did not answer in time", route: self.route, provider: self.provider)
    }

    private func errorMessage(_ result: CURLcode) -> String {
        let detail = self.errorBuffer.map { String(cString: $0) } ?? ""
        let summary = String(cString: curl_easy_strerror(result))
        if result == CURLE_OK {
            return "the upstream sent no valid response"
        }
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }

    private func fail(_ error: ProxyError) {
        self.post(end: .fail(error))
    }

    private func post(end: CurlDelivery.End) {
        self.outbox.end = end
        self.outbox.resentByLibcurl = self.outbox.resentByLibcurl || self.life.resent
        self.queueOutbox()
    }

    private func queueOutbox() {
        if self.life.collected() {
            self.engine.outboxReady(self)
        }
    }

    /// Hands what was collected to the sink (engine thread).
    func deliverOutbox() {
        self.life.outboxDelivered()
        guard !self.outbox.isEmpty else { return }
        // Taken out by a swap: moved, not copied and then released.
        var delivery = CurlDelivery()
        swap(&delivery, &self.outbox)
        self.sink.deliver(delivery, from: self)
    }

    /// The sink took `bytes` of body; `consumerWritable` is whether it can take more now.
    /// When it cannot, the transfer stays paused until ``consumerBecameWritable()`` or a later
    /// delivery that finds the consumer writable: a block an earlier delivery reported ends
    /// then too, since the consumer may have drained without another writable event.
    package func bodyDelivered(_ bytes: Int, consumerWritable: Bool) {
        let resume = self.shared.withLockedValue {
            $0.flow.responseDelivered(bytes, consumerWritable: consumerWritable)
        }
        if resume { self.engine.resume(self) }
    }

    /// The sink's consumer drained; a paused transfer continues.
    package func consumerBecameWritable() {
        let resume = self.shared.withLockedValue { $0.flow.consumerBecameWritable() }
        if resume { self.engine.resume(self) }
    }

    // MARK: libcurl callbacks (engine thread)

    fileprivate func readRequestBody(into target: UnsafeMutableRawBufferPointer) -> Int {
        let (count, resumeClient, ended) = self.shared.withLockedValue { shared -> (Int, Bool, Bool) in
            switch shared.flow.readRequested() {
            case .end:
                return (0, false, true)
            case .pause:
                return (-1, false, false)
            case .copy:
                let count = shared.body.read(into: target)
                return (count, shared.flow.bodyConsumed(count), false)
            }
        }
        if resumeClient {
            self.sink.resumeRequestBody()
        }
        if ended {
            // The request is fully sent: the first-byte deadline starts now.
            self.report(self.life.requestSent(now: .now))
            return 0
        }
        if count > 0, case .length(let length) = self.setup.request.body {
            self.bodyBytesRead += Int64(count)
            if self.bodyBytesRead >= length {
                // libcurl asks for no more (RFC 9112 §6.2): the request is sent.
                self.report(self.life.requestSent(now: .now))
            }
        }
        return count < 0 ? tp_readfunc_pause() : count
    }

    fileprivate func receivedHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        guard self.life.headerLineArrived() else { return true }  // trailers after the body are dropped
        switch self.parser.line(bytes: line) {
        case .pending, .interim:
            return true
        case .invalid:
            return false
        case .complete:
            if let problem = self.parser.framingProblem {
                // Not relayed: the transfer stops here and the client gets 502.
                self.life.headRefused(
                    ProxyError(.upstreamUnreachable, problem, route: self.route, provider: self.provider)
                )
                return false
            }
            self.report(self.life.headComplete(now: .now))
            self.outbox.head = self.parser.head(
                requestIsHead: self.requestIsHead,
                rewriteLocation: { self.sink.rewrittenLocation($0) }
            )
            self.outbox.resentByLibcurl = self.life.resent
            self.queueOutbox()
            return true
        }
    }

    /// libcurl is about to send the request on a connection (engine thread): false stops a
    /// second send of a request that must not be sent twice.
    fileprivate func sending() -> Bool {
        self.life.sending()
    }

    /// Takes body bytes from libcurl's write callback: their count, or libcurl's pause value
    /// when the client has too much in flight or cannot take more. Internal for tests.
    func receivedBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        let accepted = self.shared.withLockedValue { $0.flow.responseArrived(bytes.count) }
        guard accepted else {
            self.life.bodyPaused()
            return tp_writefunc_pause()
        }
        self.report(self.life.bodyTaken(now: .now))
        // One buffer per delivery, however many pieces libcurl wrote meanwhile.
        self.outbox.body.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        self.outbox.bodyBytes += bytes.count
        self.queueOutbox()
        return bytes.count
    }
}

/// Calls `body` with the transfer `userdata` points to, or gives `fallback` for none. The
/// transfer is not retained for the call: while libcurl can call back for it, the engine
/// holds it, in its table of transfers or, once a pass took it out to finish or cancel it,
/// in that pass's own reference until its easy handle left the multi handle. This holds as
/// long as nothing a callback reaches takes a transfer out of the table then and there: the
/// engine does so only in its own loop (`CurlEngine.finish`, a cancel command).
private func withTransfer<Result>(
    _ userdata: UnsafeMutableRawPointer?,
    orElse fallback: Result,
    _ body: (CurlTransfer) -> Result
) -> Result {
    guard let userdata else { return fallback }
    return Unmanaged<CurlTransfer>.fromOpaque(userdata)._withUnsafeGuaranteedRef(body)
}

private let curlWriteCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let data else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    return withTransfer(userdata, orElse: 0) { $0.receivedBody(bytes) }
}

private let curlReadCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let data else { return tp_readfunc_abort() }
    return withTransfer(userdata, orElse: tp_readfunc_abort()) {
        $0.readRequestBody(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
    }
}

private let curlHeaderCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let data else { return 0 }
    let line = UnsafeRawBufferPointer(start: data, count: size * count)
    return withTransfer(userdata, orElse: 0) { $0.receivedHeaderLine(line) ? size * count : 0 }
}

private let curlPrerequestCallback: CurlEasy.PrerequestCallback = { userdata, _, _, _, _ in
    withTransfer(userdata, orElse: true) { $0.sending() } ? tp_prereq_ok() : tp_prereq_abort()
}

/// Opens the upstream sockets: close-on-exec, and only while descriptors are not short. A
/// socket that cannot be made, or that lies in the reserve ``DescriptorLimit`` keeps, is not
/// used; libcurl then fails the transfer to connect, and the client gets 502
/// `upstream_unreachable`.
private let curlOpenSocketCallback: CurlEasy.OpenSocketCallback = {
    _,
    _,
    address in
    guard let address else { return -1 }
    let descriptor = socket(
        address.pointee.family,
        address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue),
        address.pointee.protocol
    )
    guard descriptor >= 0 else { return -1 }
    guard DescriptorLimit.admitsUpstreamSocket(descriptor) else {
        close(descriptor)
        return -1
    }
    return descriptor
}
