import CCurl
import CSystemShims
import Dispatch
import Synchronization
import TokenProxyConfiguration
import TokenProxyHTTP
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
/// Threads: the `engine*` fields are touched only on the engine thread; ``Shared`` is
/// the state both sides touch, behind its mutex. That makes `@unchecked Sendable` sound.
package final class CurlTransfer: @unchecked Sendable {
    /// TLS, protocol and timeout settings taken from the route and the limits.
    package struct Options: Sendable {
        var allowPlainHTTP: Bool
        var caFile: String?
        var clientCertificate: String?
        var clientKeyPEM: String?
        var connectTimeout: Double
        var firstByteTimeout: Double
        /// The whole life of the transfer, connect to last byte (`CURLOPT_TIMEOUT_MS`); nil for
        /// none (client traffic, whose body may stream for as long as it brings bytes).
        var totalTimeout: Double? = nil
        /// How long the response may bring no byte once its head arrived; nil for no limit.
        /// Time paused for a slow client does not count (the client's own send deadline
        /// bounds that).
        var idleTimeout: Double? = nil
        /// Whether libcurl may send the request a second time by itself (it does when a
        /// connection from its cache turns out closed before any answer): only for idempotent
        /// methods (RFC 9110 §9.2.2); for the others that second send is stopped and the
        /// transfer fails instead.
        var resendable = true
        /// Whether the request must go out on a new connection rather than one from the cache
        /// (`CURLOPT_FRESH_CONNECT`): for a request sent again after a reused one failed.
        var freshConnection = false

        /// Options for one transfer; the others keep their defaults.
        package init(
            allowPlainHTTP: Bool,
            caFile: String?,
            clientCertificate: String?,
            clientKeyPEM: String?,
            connectTimeout: Double,
            firstByteTimeout: Double,
            totalTimeout: Double? = nil,
            idleTimeout: Double? = nil,
            resendable: Bool = true,
            freshConnection: Bool = false
        ) {
            self.allowPlainHTTP = allowPlainHTTP
            self.caFile = caFile
            self.clientCertificate = clientCertificate
            self.clientKeyPEM = clientKeyPEM
            self.connectTimeout = connectTimeout
            self.firstByteTimeout = firstByteTimeout
            self.totalTimeout = totalTimeout
            self.idleTimeout = idleTimeout
            self.resendable = resendable
            self.freshConnection = freshConnection
        }
    }

    /// What the client's side and the engine share, behind `shared`'s mutex: the request
    /// body not yet handed to libcurl, and the flow control of both directions.
    private struct Shared {
        var body = ByteQueue(compactionThreshold: TransferFlowControl.bodyHighMark)
        var flow = TransferFlowControl()
    }

    package let request: UpstreamRequest
    let options: Options
    /// Where the response goes: a client exchange, or a buffer for the proxy's own requests.
    let sink: any CurlResponseSink
    /// Maps the upstream's `Location` onto the proxy; nil for the proxy's own requests.
    let rewriteLocation: (@Sendable (String) -> String)?
    let requestIsHead: Bool
    /// Route and provider names for error messages.
    let route: String?
    let provider: String?

    private let shared = Mutex(Shared())
    private weak var engine: CurlEngine?

    // Engine thread only.
    private(set) var easy: CurlEasy?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var errorBuffer: UnsafeMutablePointer<CChar>?
    private var parser = UpstreamResponseParser()
    private var headSent = false
    /// Whether any line of a response (an interim one included) arrived.
    private var responseBegan = false
    /// Why the upstream's head was refused, when it was.
    private var headError: ProxyError?
    private var outbox = CurlDelivery()
    /// How often libcurl was about to send the request (more than once: it sent it again).
    private var sends = 0
    private var outboxQueued = false
    var result: CURLcode = CURLE_OK
    /// When the engine ends the transfer: the first-byte deadline until the response head
    /// arrived (a miss is 504), then the idle deadline, pushed back by every body byte and
    /// lifted while the transfer is paused for its client (a miss aborts the client).
    var deadline: ContinuousClock.Instant? {
        didSet {
            if let deadline = self.deadline { self.engine?.deadlineSet(deadline) }
        }
    }
    /// The first-byte and the body's idle limits as durations, computed once.
    private let firstByteLimit: Duration
    private let idleLimit: Duration?

    package init(
        request: UpstreamRequest,
        options: Options,
        sink: any CurlResponseSink,
        rewriteLocation: (@Sendable (String) -> String)?,
        route: String?,
        provider: String?
    ) {
        self.request = request
        self.options = options
        self.sink = sink
        self.rewriteLocation = rewriteLocation
        self.requestIsHead = request.method == "HEAD"
        self.route = route
        self.provider = provider
        self.firstByteLimit = .milliseconds(Int64(Self.milliseconds(options.firstByteTimeout)))
        self.idleLimit = options.idleTimeout.map { .milliseconds(Int64(Self.milliseconds($0))) }
    }

    // MARK: Client side (the exchange's queue)

    /// Adds request body bytes; returns true when enough is buffered that the producer should
    /// pause until ``CurlResponseSink/resumeRequestBody()``.
    package func appendBody(_ bytes: [UInt8]) -> Bool {
        let (resume, pauseProducer) = self.shared.withLock { shared -> (Bool, Bool) in
            shared.body.append(contentsOf: bytes)
            return shared.flow.bodyAppended(bytes.count)
        }
        if resume {
            self.engine?.resume(self)
        }
        return pauseProducer
    }

    /// Marks the request body complete.
    package func endBody() {
        let resume = self.shared.withLock { $0.flow.bodyEnded() }
        if resume {
            self.engine?.resume(self)
        }
    }

    // MARK: Engine thread

    /// Creates and configures the easy handle; nil (after answering the client) on failure.
    func prepare(engine: CurlEngine) -> CurlEasy? {
        self.engine = engine
        guard let easy = engine.takeEasyHandle() else {
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

        var ok = true
        func set(_ accepted: Bool) {
            if !accepted { ok = false }
        }
        set(easy.set(CURLOPT_PRIVATE, pointer: userdata))
        set(easy.set(CURLOPT_ERRORBUFFER, pointer: buffer))
        set(easy.set(CURLOPT_URL, self.request.url))
        // Only the route's upstream, never redirects, never another protocol, never an
        // environment proxy, and the path exactly as built (`docs/reference/security.md`).
        set(easy.set(CURLOPT_PROTOCOLS_STR, self.options.allowPlainHTTP ? "http,https" : "https"))
        set(easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "https"))
        set(easy.set(CURLOPT_FOLLOWLOCATION, 0))
        set(easy.set(CURLOPT_PROXY, ""))
        // Every host is exempt from proxies, which also keeps libcurl from looking up
        // `no_proxy` and `NO_PROXY` in the environment for every transfer.
        set(easy.set(CURLOPT_NOPROXY, "*"))
        set(easy.set(CURLOPT_PATH_AS_IS, 1))
        set(easy.set(CURLOPT_NOSIGNAL, 1))
        set(easy.set(CURLOPT_SSL_VERIFYPEER, 1))
        set(easy.set(CURLOPT_SSL_VERIFYHOST, 2))
        set(easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
        set(easy.set(CURLOPT_TCP_KEEPALIVE, 1))
        // A size for fewer, larger write callbacks on downloads. libcurl refuses to change it
        // on a reused handle whose buffer already exists (it then keeps its default read
        // size), so the result is not checked: it is a speed setting, not a safety one.
        _ = easy.set(CURLOPT_BUFFERSIZE, 128 * 1024)
        set(easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(self.options.connectTimeout)))
        if let total = self.options.totalTimeout {
            // The whole life: connect, TLS handshake, head, and every body byte.
            set(easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(total)))
        }
        if self.options.freshConnection {
            set(easy.set(CURLOPT_FRESH_CONNECT, 1))
        }
        if let caFile = self.options.caFile {
            set(easy.set(CURLOPT_CAINFO, caFile))
        }
        if let certificate = self.options.clientCertificate {
            set(easy.set(CURLOPT_SSLCERT, certificate))
        }
        if let key = self.options.clientKeyPEM {
            set(easy.set(CURLOPT_SSLKEY_BLOB, blob: Array(key.utf8)))
        }
        set(easy.setWriteCallback(curlWriteCallback))
        set(easy.set(CURLOPT_WRITEDATA, pointer: userdata))
        set(easy.setHeaderCallback(curlHeaderCallback))
        set(easy.setOpenSocketCallback(curlOpenSocketCallback))
        set(easy.setPrerequestCallback(curlPrerequestCallback))
        set(easy.set(CURLOPT_PREREQDATA, pointer: userdata))
        set(easy.set(CURLOPT_HEADERDATA, pointer: userdata))

        if self.request.body == .none || self.request.method == "HEAD" {
            // Without a body, libcurl's upload buffer only carries the request head over TLS
            // with HTTP/1.1 (a larger head goes out in several pieces; a test sends 21 KB).
            // libcurl allocates the buffer for every request and frees it at the end: 16 KiB,
            // its minimum, instead of the default 64 KiB stays below the size whose `free`
            // makes glibc consolidate its free lists.
            set(easy.set(CURLOPT_UPLOAD_BUFFERSIZE, 16 * 1024))
        }
        switch (self.request.method, self.request.body) {
        case ("HEAD", _):
            set(easy.set(CURLOPT_NOBODY, 1))
        case ("GET", .none):
            set(easy.set(CURLOPT_HTTPGET, 1))
        case (let method, .none):
            set(easy.set(CURLOPT_CUSTOMREQUEST, method))
        case (let method, let body):
            set(easy.set(CURLOPT_UPLOAD, 1))
            set(easy.set(CURLOPT_CUSTOMREQUEST, method))
            set(easy.setReadCallback(curlReadCallback))
            set(easy.set(CURLOPT_READDATA, pointer: userdata))
            if case .length(let length) = body {
                set(easy.set(CURLOPT_INFILESIZE_LARGE, size: length))
            }
        }

        var list: UnsafeMutablePointer<curl_slist>?
        var line: [UInt8] = []
        line.reserveCapacity(256)
        self.request.headers.forEachField { name, value in
            // Names and values were checked by the parser; check again at the boundary, since
            // a CR, LF or NUL here would split the upstream request.
            guard HTTPGrammar.isToken(name), HTTPGrammar.isValidFieldValue(value) else { return }
            // "Name:" would tell libcurl to drop the field; "Name;" sends it empty.
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: name)
            if value.isEmpty {
                line.append(UInt8(ascii: ";"))
            } else {
                line.append(UInt8(ascii: ":"))
                line.append(UInt8(ascii: " "))
                line.append(contentsOf: value)
            }
            line.append(0)
            list = line.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { curl_slist_append(list, $0.baseAddress) }
            }
        }
        // Headers libcurl would add on its own: the client decides, not the proxy.
        list = curl_slist_append(list, "Expect:")
        if !self.request.headers.contains("Accept") {
            list = curl_slist_append(list, "Accept:")
        }
        self.headerList = list
        set(easy.set(headers: list))

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
        if self.request.body == .none {
            self.deadline = .now + self.firstByteLimit
        }
        return easy
    }

    /// `seconds` as whole milliseconds for libcurl, at least 1 (0 would mean "no timeout").
    /// The value is already bounded by the configuration (at most a day).
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(1, Int(min(seconds, Limits.maxSeconds) * 1000))
    }

    /// Continues a paused transfer; a response body waiting for its client counts as idle
    /// again from now.
    func unpause() {
        if self.headSent, let idle = self.idleLimit {
            self.deadline = .now + idle
        }
        self.easy?.unpause()
    }

    /// Gives the easy handle back to the engine (or frees it); called after it was removed
    /// from the multi handle.
    func release() {
        if let easy = self.easy {
            if let engine = self.engine {
                engine.recycle(easy)
            } else {
                easy.cleanup()
            }
            self.easy = nil
        }
        curl_slist_free_all(self.headerList)
        self.headerList = nil
        self.errorBuffer?.deallocate()
        self.errorBuffer = nil
    }

    /// Reports the end of the transfer to the client.
    func complete(timedOut: Bool) {
        if timedOut {
            if self.headSent {
                self.post(end: .abort)
            } else {
                self.post(end: .fail(self.timeoutError()))
            }
        } else if self.result == CURLE_OK && self.headSent {
            self.post(end: .finish)
        } else if self.headSent {
            // Reset after the head went out: the client must see a broken body, never a
            // complete-looking one.
            self.post(end: .abort)
        } else if let headError = self.headError {
            self.post(end: .fail(headError))
        } else if self.result == CURLE_ABORTED_BY_CALLBACK, self.sends > 1 {
            let error = ProxyError(
                .upstreamUnreachable,
                "the upstream closed the kept-alive connection before answering; a \(self.request.method) "
                    + "request is not sent twice",
                route: self.route,
                provider: self.provider
            )
            self.post(end: .fail(error))
        } else if self.result == CURLE_OPERATION_TIMEDOUT, self.easy?.sentRequest == true {
            // The whole-life timeout ran out after the request went out: the upstream's silence.
            self.post(end: .fail(self.timeoutError()))
        } else {
            let error = ProxyError(
                .upstreamUnreachable,
                self.errorMessage(),
                route: self.route,
                provider: self.provider
            )
            self.post(end: self.lostReusedConnection ? .lostReusedConnection(error) : .fail(error))
        }
    }

    /// Whether the transfer failed the way a kept-alive connection the upstream has just
    /// closed fails, before any byte of a response:
    ///
    /// - on a connection from the cache, sending or receiving failed, or nothing came back.
    ///   libcurl itself sends the request again on a new connection when sending the head
    ///   fails, or receiving fails or ends with nothing, but not when sending fails later (the
    ///   rest of a large head, the body);
    /// - libcurl found a connection from the cache dead with nothing received and, sending
    ///   the request again, could not rewind its body (`CURLE_SEND_FAIL_REWIND`): the body is
    ///   not libcurl's to replay. With the options set here (no HTTP authentication, no
    ///   redirects, no `Expect`) that retry is the only rewind libcurl asks for.
    private var lostReusedConnection: Bool {
        guard !self.responseBegan else { return false }
        switch self.result {
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING:
            return self.easy?.reusedConnection == true
        case CURLE_SEND_FAIL_REWIND:
            return true
        default:
            return false
        }
    }

    /// 504 `upstream_timeout`: no response head in time.
    private func timeoutError() -> ProxyError {
        ProxyError(.upstreamTimeout, "the upstream did not answer in time", route: self.route, provider: self.provider)
    }

    private func errorMessage() -> String {
        let detail = self.errorBuffer.map { String(cString: $0) } ?? ""
        let summary = String(cString: curl_easy_strerror(self.result))
        if self.result == CURLE_OK {
            return "the upstream sent no valid response"
        }
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }

    private func fail(_ error: ProxyError) {
        self.post(end: .fail(error))
    }

    private func post(end: CurlDelivery.End) {
        self.outbox.end = end
        self.outbox.resentByLibcurl = self.outbox.resentByLibcurl || self.resent
        self.queueOutbox()
    }

    private func queueOutbox() {
        guard !self.outboxQueued else { return }
        self.outboxQueued = true
        self.engine?.outboxReady(self)
    }

    /// Hands what was collected to the sink (engine thread).
    func deliverOutbox() {
        self.outboxQueued = false
        guard !self.outbox.isEmpty else { return }
        let delivery = self.outbox
        self.outbox = CurlDelivery()
        self.sink.deliver(delivery, from: self)
    }

    /// The sink took `bytes` of body; `consumerWritable` is whether it can take more now.
    /// When it cannot, the transfer stays paused until ``consumerBecameWritable()`` or a later
    /// delivery that finds the consumer writable: a block an earlier delivery reported ends
    /// then too, since the consumer may have drained without another writable event.
    package func bodyDelivered(_ bytes: Int, consumerWritable: Bool) {
        let resume = self.shared.withLock { $0.flow.responseDelivered(bytes, consumerWritable: consumerWritable) }
        if resume { self.engine?.resume(self) }
    }

    /// The sink's consumer drained; a paused transfer continues.
    package func consumerBecameWritable() {
        let resume = self.shared.withLock { $0.flow.consumerBecameWritable() }
        if resume { self.engine?.resume(self) }
    }

    // MARK: libcurl callbacks (engine thread)

    fileprivate func readRequestBody(into target: UnsafeMutableRawBufferPointer) -> Int {
        let (count, resumeClient, ended) = self.shared.withLock { shared -> (Int, Bool, Bool) in
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
            if !self.headSent {
                self.deadline = .now + self.firstByteLimit
            }
            return 0
        }
        return count < 0 ? tp_readfunc_pause() : count
    }

    fileprivate func receivedHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        guard !self.headSent else { return true }  // trailers after the body are dropped
        self.responseBegan = true
        switch self.parser.line(bytes: line) {
        case .pending, .interim:
            return true
        case .invalid:
            return false
        case .complete:
            if let problem = self.parser.framingProblem {
                // Not relayed: the transfer stops here and the client gets 502.
                self.headError = ProxyError(.upstreamUnreachable, problem, route: self.route, provider: self.provider)
                return false
            }
            self.headSent = true
            self.deadline = self.idleLimit.map { .now + $0 }
            self.outbox.head = self.parser.head(
                requestIsHead: self.requestIsHead,
                rewriteLocation: self.rewriteLocation
            )
            self.outbox.resentByLibcurl = self.resent
            self.queueOutbox()
            return true
        }
    }

    /// Whether libcurl sent the request a second time (a stopped second send does not count).
    private var resent: Bool {
        self.sends > 1 && self.options.resendable
    }

    /// libcurl is about to send the request on a connection (engine thread): false stops a
    /// second send of a request that must not be sent twice.
    fileprivate func sending() -> Bool {
        self.sends += 1
        return self.sends == 1 || self.options.resendable
    }

    /// Takes body bytes from libcurl's write callback: their count, or libcurl's pause value
    /// when the client has too much in flight or cannot take more. Internal for tests.
    func receivedBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        let accepted = self.shared.withLock { $0.flow.responseArrived(bytes.count) }
        guard accepted else {
            // Waiting for the client is not the upstream's silence.
            self.deadline = nil
            return tp_writefunc_pause()
        }
        if let idle = self.idleLimit {
            self.deadline = .now + idle
        }
        self.outbox.body.append([UInt8](bytes))
        self.outbox.bodyBytes += bytes.count
        self.queueOutbox()
        return bytes.count
    }
}

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> CurlTransfer? {
    userdata.map { Unmanaged<CurlTransfer>.fromOpaque($0).takeUnretainedValue() }
}

private let curlWriteCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let transfer = transfer(userdata), let data else { return 0 }
    return transfer.receivedBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private let curlReadCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let transfer = transfer(userdata), let data else { return tp_readfunc_abort() }
    return transfer.readRequestBody(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
}

private let curlHeaderCallback: CurlEasy.DataCallback = {
    data,
    size,
    count,
    userdata in
    guard let transfer = transfer(userdata), let data else { return 0 }
    let line = UnsafeRawBufferPointer(start: data, count: size * count)
    return transfer.receivedHeaderLine(line) ? size * count : 0
}

private let curlPrerequestCallback: CurlEasy.PrerequestCallback = { userdata, _, _, _, _ in
    transfer(userdata)?.sending() == false ? tp_prereq_abort() : tp_prereq_ok()
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
