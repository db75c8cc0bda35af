import CCurl
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// libcurl's multi interface driven by Dispatch: libcurl's socket callback maps each socket
/// it wants watched onto DispatchSources, its timer callback onto a DispatchSourceTimer, and
/// every libcurl call runs on one serial queue.
///
/// Sockets are closed by us, through `CURLOPT_CLOSESOCKETFUNCTION`, and only after the
/// cancel handlers of the sources watching them ran: closing first could let a new socket
/// reuse the number while Dispatch still watches the old one.
///
/// `@unchecked Sendable`: all state is confined to `queue`; public methods hop onto it.
public final class CurlDispatchEngine: CurlEngine, @unchecked Sendable {
    private final class Watch {
        var read: DispatchSourceRead?
        var write: DispatchSourceWrite?
    }

    private let queue = DispatchQueue(label: "tokenproxy.curl.dispatch")
    private let multi: UnsafeMutableRawPointer
    private var watches: [curl_socket_t: Watch] = [:]
    /// Cancelled sources whose cancel handlers have not run yet, per socket.
    private var cancelling: [curl_socket_t: Int] = [:]
    /// Sockets libcurl asked to close while their sources were still cancelling.
    private var closeDeferred: Set<curl_socket_t> = []
    private var transfers: [ObjectIdentifier: CurlTransfer] = [:]
    private var outboxes: [CurlTransfer] = []
    /// Idle easy handles (engine thread only).
    private var easyPool = CurlEasyPool()
    private let timer: DispatchSourceTimer
    private let deadlineTimer: DispatchSourceTimer
    private var timeoutPending = false

    /// Creates the engine.
    public init() {
        CurlGlobal.initialize()
        // Safe because curl_multi_init only returns nil when out of memory, where nothing can go on.
        guard let multi = curl_multi_init() else { preconditionFailure("curl_multi_init failed") }
        self.multi = multi
        self.timer = DispatchSource.makeTimerSource(queue: self.queue)
        self.deadlineTimer = DispatchSource.makeTimerSource(queue: self.queue)
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        _ = tp_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 256)
        _ = tp_multi_setopt_socket_callback(multi, dispatchSocketCallback)
        _ = tp_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, userdata)
        _ = tp_multi_setopt_timer_callback(multi, dispatchTimerCallback)
        _ = tp_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, userdata)
        self.timer.setEventHandler { [unowned self] in self.action(tp_socket_timeout(), 0) }
        self.timer.schedule(deadline: .distantFuture)
        self.timer.resume()
        self.deadlineTimer.setEventHandler { [unowned self] in self.checkDeadlines() }
        self.deadlineTimer.schedule(deadline: .distantFuture)
        self.deadlineTimer.resume()
    }

    /// Starts a transfer.
    public func add(_ transfer: CurlTransfer) {
        self.queue.async {
            guard let easy = transfer.prepare(engine: self) else {
                self.flushOutboxes()
                return
            }
            self.transfers[ObjectIdentifier(transfer)] = transfer
            curl_multi_add_handle(self.multi, easy)
            self.scheduleDeadlines()
        }
    }

    /// Continues a paused transfer.
    public func resume(_ transfer: CurlTransfer) {
        self.queue.async {
            guard self.transfers[ObjectIdentifier(transfer)] != nil else { return }
            transfer.unpause()
            self.afterAction()
        }
    }

    /// Stops a transfer.
    public func cancel(_ transfer: CurlTransfer) {
        self.queue.async {
            guard let easy = transfer.easy, self.transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil else {
                return
            }
            curl_multi_remove_handle(self.multi, easy)
            transfer.release()
        }
    }

    /// Queues a transfer's outbox for delivery after the current libcurl call.
    public func outboxReady(_ transfer: CurlTransfer) {
        self.outboxes.append(transfer)
    }

    /// Routes socket closing through ``closeSocket(_:)``.
    public func configure(_ easy: UnsafeMutableRawPointer) {
        _ = tp_easy_setopt_closesocket_callback(easy, dispatchCloseSocketCallback)
        _ = tp_easy_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A reused or new easy handle (engine thread).
    public func takeEasyHandle() -> UnsafeMutableRawPointer? {
        self.easyPool.take()
    }

    /// Keeps `easy` for the next transfer (engine thread).
    public func recycle(_ easy: UnsafeMutableRawPointer) {
        self.easyPool.recycle(easy)
    }

    // MARK: libcurl callbacks (on the queue, inside libcurl calls)

    fileprivate func watch(_ socket: curl_socket_t, what: Int32) {
        if what == tp_poll_remove() {
            if let watch = self.watches.removeValue(forKey: socket) {
                self.cancel(watch.read, socket)
                self.cancel(watch.write, socket)
            }
            return
        }
        let watch = self.watches[socket] ?? Watch()
        self.watches[socket] = watch
        let wantsRead = what == tp_poll_in() || what == tp_poll_inout()
        let wantsWrite = what == tp_poll_out() || what == tp_poll_inout()
        if wantsRead, watch.read == nil {
            let source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: self.queue)
            source.setEventHandler { [unowned self] in self.action(socket, tp_cselect_in()) }
            source.resume()
            watch.read = source
        } else if !wantsRead, let source = watch.read {
            watch.read = nil
            self.cancel(source, socket)
        }
        if wantsWrite, watch.write == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: socket, queue: self.queue)
            source.setEventHandler { [unowned self] in self.action(socket, tp_cselect_out()) }
            source.resume()
            watch.write = source
        } else if !wantsWrite, let source = watch.write {
            watch.write = nil
            self.cancel(source, socket)
        }
    }

    private func cancel(_ source: (any DispatchSourceProtocol)?, _ socket: curl_socket_t) {
        guard let source else { return }
        self.cancelling[socket, default: 0] += 1
        source.setCancelHandler { [unowned self] in
            let remaining = (self.cancelling[socket] ?? 1) - 1
            self.cancelling[socket] = remaining == 0 ? nil : remaining
            if remaining == 0, self.closeDeferred.remove(socket) != nil {
                Glibc.close(socket)
            }
        }
        source.cancel()
    }

    fileprivate func closeSocket(_ socket: curl_socket_t) -> Int32 {
        if self.cancelling[socket] != nil {
            self.closeDeferred.insert(socket)
            return 0
        }
        return Glibc.close(socket)
    }

    fileprivate func setTimer(_ milliseconds: Int) {
        if milliseconds < 0 {
            self.timer.schedule(deadline: .distantFuture)
        } else if milliseconds == 0 {
            // libcurl must not be called from inside its own timer callback: run it next.
            guard !self.timeoutPending else { return }
            self.timeoutPending = true
            self.queue.async { [unowned self] in
                self.timeoutPending = false
                self.action(tp_socket_timeout(), 0)
            }
        } else {
            self.timer.schedule(deadline: .now() + .milliseconds(milliseconds))
        }
    }

    // MARK: Driving libcurl

    private func action(_ socket: curl_socket_t, _ events: Int32) {
        var running: Int32 = 0
        curl_multi_socket_action(self.multi, socket, events, &running)
        self.afterAction()
    }

    private func afterAction() {
        CurlMulti.collectFinished(self.multi) { self.finish($0, timedOut: false) }
        self.flushOutboxes()
        self.scheduleDeadlines()
    }

    private func finish(_ transfer: CurlTransfer, timedOut: Bool) {
        CurlMulti.finish(transfer, timedOut: timedOut, multi: self.multi, transfers: &self.transfers)
    }

    private func flushOutboxes() {
        guard !self.outboxes.isEmpty else { return }
        let ready = self.outboxes
        self.outboxes.removeAll(keepingCapacity: true)
        for transfer in ready {
            transfer.deliverOutbox()
        }
    }

    private func checkDeadlines() {
        let now = ContinuousClock.now
        for transfer in self.transfers.values {
            if let deadline = transfer.firstByteDeadline, deadline <= now {
                self.finish(transfer, timedOut: true)
            }
        }
        self.flushOutboxes()
        self.scheduleDeadlines()
    }

    private func scheduleDeadlines() {
        let next = self.transfers.values.compactMap(\.firstByteDeadline).min()
        guard let next else {
            self.deadlineTimer.schedule(deadline: .distantFuture)
            return
        }
        let delay = max(0, (next - .now).milliseconds + 1)
        self.deadlineTimer.schedule(deadline: .now() + .milliseconds(Int(delay)))
    }
}

private func dispatchEngine(_ userdata: UnsafeMutableRawPointer?) -> CurlDispatchEngine? {
    userdata.map { Unmanaged<CurlDispatchEngine>.fromOpaque($0).takeUnretainedValue() }
}

private let dispatchSocketCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_socket_t, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
        ->
        Int32 = { _, socket, what, userdata, _ in
            dispatchEngine(userdata)?.watch(socket, what: what)
            return 0
        }

private let dispatchTimerCallback: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32 = {
    _,
    milliseconds,
    userdata in
    dispatchEngine(userdata)?.setTimer(milliseconds)
    return 0
}

private let dispatchCloseSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t) -> Int32 = {
    userdata,
    socket in
    dispatchEngine(userdata)?.closeSocket(socket) ?? Glibc.close(socket)
}
