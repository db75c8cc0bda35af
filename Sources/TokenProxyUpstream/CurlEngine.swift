import CCurl
import CSystemShims
import Foundation
import Synchronization
import TokenProxySupport

/// What drives libcurl transfers: libcurl's multi interface on one event thread. The thread
/// waits in `epoll_wait` on the sockets libcurl asks to have watched
/// (`CURLMOPT_SOCKETFUNCTION`) and on an eventfd, and hands each ready socket to
/// `curl_multi_socket_action`, so that a pass touches only the transfers that have something
/// to do; libcurl's own timers (a new transfer's start among them) run when
/// `curl_multi_timeout` says they are due. Commands (add, resume, cancel) come from other
/// threads through a locked inbox, and the eventfd wakes the thread when it sleeps.
///
/// Every libcurl call on the multi handle and its easy handles happens on this thread; the
/// transfers' callbacks run there too and hand data to client connections through their
/// queues. Connections to upstreams are cached by the multi handle and reused across client
/// requests; HTTP/2 is negotiated by ALPN and multiplexed. `docs/contributing/architecture.md` explains
/// why this design was kept over two others that were measured.
///
/// `@unchecked Sendable`: each field says what guards it. The `var` fields, the multi
/// handle and the epoll set are touched only on the event thread; the inbox is behind its
/// mutex; writing the eventfd is thread-safe.
package final class CurlEngine: @unchecked Sendable {
    /// What another thread asks of the engine.
    enum Command {
        case add(CurlTransfer)
        case resume(CurlTransfer)
        case cancel(CurlTransfer)
    }

    /// Commands from other threads, and whether the event thread is (about to be) asleep
    /// in `epoll_wait` with none of them seen: only then does a command need a wake-up.
    struct Inbox {
        var commands: [Command] = []
        var sleeping = false
    }

    /// The multi handle (engine thread only).
    let multi: UnsafeMutableRawPointer
    /// The wake-up eventfd, in the epoll set beside libcurl's sockets. An eventfd rather than
    /// `curl_multi_wakeup`, which in libcurl 7.88 is a socket pair: a `send` that allocates a
    /// socket buffer on the waking thread, and two reads on this one (the byte, then the
    /// `EAGAIN` that shows the pair drained); an eventfd is one write and one read.
    private let wakeup: Int32
    /// The epoll set the thread waits on: the wake-up eventfd and libcurl's sockets, each
    /// watched for what libcurl last asked (engine thread only).
    private let epoll: Int32
    /// Commands from other threads (guarded by its mutex).
    let inbox = Mutex(Inbox())
    /// The running transfers, which the table keeps alive (engine thread only).
    private var transfers = TransferTable()
    /// Transfers whose socket could not be added to the epoll set, ended with an error once
    /// the libcurl call that asked for it returned (engine thread only).
    private var unwatchable: [CurlTransfer] = []
    /// Transfers with something for their client, delivered once libcurl's calls of a pass
    /// returned (engine thread only).
    private var outboxes: [CurlTransfer] = []
    /// The event thread; written once in `init`, never read.
    private var thread: Thread?
    /// Idle easy handles (engine thread only).
    private var easyPool = CurlEasyPool()
    /// No transfer's deadline (first byte or idle body) is earlier than this (engine thread only). It may
    /// belong to a transfer that has its answer by now; the transfers are only scanned once
    /// it has passed, not on every turn of the loop.
    private var earliestDeadline: MonotonicTime?
    /// The size of libcurl's cache of idle upstream connections (engine thread only).
    private var maximumCachedConnections = CurlEngine.minimumCachedConnections

    /// The longest the thread sleeps with nothing due; commands and libcurl's own timers
    /// wake it earlier (immutable).
    private let idleWaitMilliseconds: Int

    /// Creates an engine and starts its event thread. `idleWait` only bounds a sleep with
    /// nothing due (tests make it long, so that a missed wake-up shows as a hang). Fails when
    /// the process has no descriptor left for the wake-up eventfd or libcurl no memory for
    /// its multi handle.
    package init(name: String = "tp-curl", idleWait: Duration = .seconds(1)) throws(SystemError) {
        self.idleWaitMilliseconds = Int(min(max(idleWait.milliseconds, 1), Int64(Int32.max)))
        CurlGlobal.initialize()
        let wakeup = tp_wakeup_eventfd()
        guard wakeup >= 0 else { throw SystemError(call: "eventfd", errno: errno) }
        let epoll = tp_epoll_create()
        guard epoll >= 0, tp_epoll_watch(epoll, wakeup, 1, 0, 0) == 0 else {
            let error = SystemError(call: "epoll_create1", errno: errno)
            if epoll >= 0 { close(epoll) }
            close(wakeup)
            throw error
        }
        guard let multi = curl_multi_init() else {
            close(epoll)
            close(wakeup)
            throw SystemError(call: "curl_multi_init", errno: ENOMEM)
        }
        self.multi = multi
        self.wakeup = wakeup
        self.epoll = epoll
        _ = tp_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, CurlEngine.minimumCachedConnections)
        // The engine lives as long as its thread, which never ends: an unretained reference
        // is valid for every callback.
        _ = tp_multi_setopt_socket_callback(multi, curlSocketCallback, Unmanaged.passUnretained(self).toOpaque())
        self.thread = NamedThread.start(named: name) { [self] in self.run() }
    }

    /// Starts `transfer`, which must have been made for this engine. Its callbacks run on the
    /// event thread from now on.
    package func add(_ transfer: CurlTransfer) {
        assert(transfer.engine === self, "a transfer runs on the engine it was made for")
        self.send(.add(transfer))
    }

    /// Resumes a transfer one of whose directions was paused for lack of data or room.
    package func resume(_ transfer: CurlTransfer) {
        self.send(.resume(transfer))
    }

    /// Stops a transfer: its upstream connection is closed if the exchange was incomplete.
    package func cancel(_ transfer: CurlTransfer) {
        self.send(.cancel(transfer))
    }

    /// Called on the event thread by a transfer that collected something for its client.
    func outboxReady(_ transfer: CurlTransfer) {
        self.outboxes.append(transfer)
    }

    /// A reused or new easy handle (engine thread).
    func takeEasyHandle() -> CurlEasy? {
        self.easyPool.take()
    }

    /// Keeps `easy` for the next transfer (engine thread).
    func recycle(_ easy: CurlEasy) {
        self.easyPool.recycle(easy)
    }

    private func send(_ command: Command) {
        let wake = self.inbox.withLockedValue { inbox -> Bool in
            inbox.commands.append(command)
            // One wake-up per sleep: the first command after the thread went to sleep.
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if wake {
            var one: UInt64 = 1
            _ = Glibc.write(self.wakeup, &one, MemoryLayout<UInt64>.size)
        }
    }

    /// The most ready descriptors one `epoll_wait` takes.
    private static let readyBatch = 64
    /// The most transfers a pass sets up (libcurl's set-up of a request is its costliest
    /// step): a burst of new requests is spread over passes, so that the answers read in
    /// between reach their clients without waiting for all of it.
    static let setUpsPerPass = 16

    private func run() {
        // Commands taken from the inbox and not carried out yet (a burst beyond one pass's
        // set-ups), oldest first.
        var pending: [Command] = []
        var descriptors = [Int32](repeating: 0, count: Self.readyBatch)
        var flags = [Int32](repeating: 0, count: Self.readyBatch)
        while true {
            // New work: the commands, then libcurl's due timers, among them the start of each
            // transfer just added.
            self.inbox.withLockedValue { inbox in
                if pending.isEmpty {
                    swap(&pending, &inbox.commands)
                } else if !inbox.commands.isEmpty {
                    pending.append(contentsOf: inbox.commands)
                    inbox.commands.removeAll(keepingCapacity: true)
                }
                inbox.sleeping = false
            }
            self.apply(from: &pending)
            self.runDueTimers()
            let now = MonotonicTime.now
            if let earliest = self.earliestDeadline, earliest <= now {
                self.expireDeadlines(now: now)
            }
            self.collectAndDeliver()
            // Read before the inbox says the thread sleeps, so that a thread that sees it asleep
            // (under the inbox's lock) sees this read done: the engine's state is its thread's
            // alone, and a test that drives a transfer by hand beside a sleeping engine relies
            // on that order.
            let earliestDeadline = self.earliestDeadline
            // Commands that came in while this turn ran, or left from a burst, are taken
            // without sleeping; otherwise the next command wakes the thread.
            let sleep = self.inbox.withLockedValue { inbox -> Bool in
                inbox.sleeping = inbox.commands.isEmpty && pending.isEmpty
                return inbox.sleeping
            }
            var timeout = 0
            if sleep {
                timeout = self.idleWaitMilliseconds
                // Asked again: ending a transfer above may have started one that waited.
                var curlTimeout = -1
                curl_multi_timeout(self.multi, &curlTimeout)
                if curlTimeout >= 0 {
                    timeout = min(timeout, curlTimeout)
                }
                if let earliest = earliestDeadline {
                    timeout = max(0, min(timeout, Int((earliest - now).milliseconds) + 1))
                }
            }
            let ready = tp_epoll_wait(self.epoll, &descriptors, &flags, Int32(Self.readyBatch), Int32(timeout))
            guard ready > 0 else { continue }
            // Only the sockets that are ready: libcurl runs the transfers on each (and any of
            // its timers that are due), and the answers read go to their clients at once.
            var running: Int32 = 0
            for index in 0..<Int(ready) {
                if descriptors[index] == self.wakeup {
                    var value: UInt64 = 0
                    _ = Glibc.read(self.wakeup, &value, MemoryLayout<UInt64>.size)
                } else {
                    curl_multi_socket_action(self.multi, descriptors[index], flags[index], &running)
                }
            }
            self.collectAndDeliver()
        }
    }

    /// Carries out the commands of `pending` in order, except the set-ups beyond the pass's
    /// bound and any later command for a transfer held back so (its resume or cancel must
    /// follow its set-up); those stay in `pending`, in order, for the next pass. Resumes and
    /// cancels of running transfers never wait behind a burst of new ones.
    private func apply(from pending: inout [Command]) {
        var setUps = 0
        var heldBack: [Command] = []
        var heldTransfers = Set<ObjectIdentifier>()
        for command in pending {
            switch command {
            case .add(let transfer):
                guard setUps < Self.setUpsPerPass else {
                    heldBack.append(command)
                    heldTransfers.insert(ObjectIdentifier(transfer))
                    continue
                }
                setUps += 1
            case .resume(let transfer), .cancel(let transfer):
                guard heldTransfers.isEmpty || !heldTransfers.contains(ObjectIdentifier(transfer)) else {
                    heldBack.append(command)
                    continue
                }
            }
            self.apply(command)
        }
        if heldBack.isEmpty {
            pending.removeAll(keepingCapacity: true)
        } else {
            pending = heldBack
        }
    }

    /// Runs libcurl's timers when one is due.
    private func runDueTimers() {
        var milliseconds = -1
        curl_multi_timeout(self.multi, &milliseconds)
        guard milliseconds == 0 else { return }
        var running: Int32 = 0
        curl_multi_socket_action(self.multi, tp_socket_timeout(), 0, &running)
    }

    /// Finishes the transfers libcurl reports done and hands every transfer's collected
    /// answer to its client: one hop per transfer per pass, however many callbacks it had.
    private func collectAndDeliver() {
        self.collectFinished()
        if !self.unwatchable.isEmpty {
            let failed = self.unwatchable
            self.unwatchable.removeAll()
            for transfer in failed {
                self.finish(transfer, result: CURLE_COULDNT_CONNECT)
            }
        }
        guard !self.outboxes.isEmpty else { return }
        for transfer in self.outboxes {
            transfer.deliverOutbox()
        }
        self.outboxes.removeAll(keepingCapacity: true)
    }

    /// Watches `descriptor` for what libcurl asks (`CURL_POLL_IN`, `_OUT`, `_INOUT`), or stops
    /// watching it (`CURL_POLL_REMOVE`, before libcurl closes it or while it waits for
    /// nothing on it). `watched` says whether libcurl knows it as watched already (the mark
    /// ``curlSocketCallback`` finds); a socket closed without a removal has left the epoll set
    /// with its last descriptor, and is added again. A socket that cannot be watched (the
    /// kernel is out of memory or of epoll watches) would never get an event: its transfer,
    /// `easy`'s, is ended with an error once libcurl's call returns, rather than left to wait.
    fileprivate func watch(_ descriptor: Int32, what: Int32, watched: Bool, easy: UnsafeMutableRawPointer?) {
        if what == CURL_POLL_REMOVE {
            tp_epoll_unwatch(self.epoll, descriptor)
            return
        }
        let readable: Int32 = what & CURL_POLL_IN != 0 ? 1 : 0
        let writable: Int32 = what & CURL_POLL_OUT != 0 ? 1 : 0
        guard tp_epoll_watch(self.epoll, descriptor, readable, writable, watched ? 1 : 0) == 0 else {
            var pointer: UnsafeMutableRawPointer?
            if let easy, tp_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer) == CURLE_OK,
                let pointer
            {
                self.unwatchable.append(Unmanaged<CurlTransfer>.fromOpaque(pointer).takeUnretainedValue())
            }
            return
        }
        if !watched {
            // Any pointer but nil marks the socket; it is never read through.
            curl_multi_assign(self.multi, descriptor, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// A transfer's deadline was set to `deadline`. A later deadline than the earliest known
    /// needs nothing: the scan once the earliest passed finds it.
    func deadlineSet(_ deadline: MonotonicTime) {
        if self.earliestDeadline.map({ deadline < $0 }) ?? true {
            self.earliestDeadline = deadline
        }
    }

    /// Ends the transfers whose first byte or next body byte is overdue, and finds the next
    /// deadline.
    private func expireDeadlines(now: MonotonicTime) {
        var next: MonotonicTime?
        for index in 0..<self.transfers.capacity {
            guard let transfer = self.transfers[index], let deadline = transfer.deadline else { continue }
            if deadline <= now {
                self.finish(transfer, result: nil)
            } else if next.map({ deadline < $0 }) ?? true {
                next = deadline
            }
        }
        self.earliestDeadline = next
    }

    /// Carries out `command` (engine thread).
    private func apply(_ command: Command) {
        switch command {
        case .add(let transfer):
            guard let easy = transfer.prepare() else { return }
            self.transfers.insert(transfer)
            self.fitConnectionCache()
            easy.add(to: self.multi)
        case .resume(let transfer):
            guard self.transfers.contains(transfer) else { return }
            transfer.unpause()
        case .cancel(let transfer):
            guard let easy = transfer.easy, self.transfers.remove(transfer) else { return }
            easy.remove(from: self.multi)
            transfer.release()
        }
    }

    /// Finishes every transfer libcurl reports done, with its result.
    private func collectFinished() {
        CurlEasy.forEachDone(in: self.multi) { userdata, result in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
            self.finish(transfer, result: result)
        }
    }

    /// Removes a transfer from the multi handle, reports its end to the client (libcurl's
    /// `result`, or nil when its deadline passed) and gives its easy handle back; the table of
    /// transfers held it alive until now. Called from the engine's loop only, never from
    /// inside a libcurl callback: the callbacks reach their transfer without retaining it.
    private func finish(_ transfer: CurlTransfer, result: CURLcode?) {
        guard let easy = transfer.easy, self.transfers.remove(transfer) else { return }
        easy.remove(from: self.multi)
        transfer.complete(result: result)
        transfer.release()
    }
}

/// libcurl's socket callback (engine thread, inside a libcurl call): `socketp` is what
/// ``CurlEngine/watch(_:what:watched:)`` assigned to the socket, nil until then.
private let curlSocketCallback: tp_socket_callback = { easy, descriptor, what, userdata, socketp in
    guard let userdata else { return -1 }
    Unmanaged<CurlEngine>.fromOpaque(userdata).takeUnretainedValue().watch(
        descriptor,
        what: what,
        watched: socketp != nil,
        easy: easy
    )
    return 0
}

extension CurlEngine {
    /// The connection cache's size while few transfers run at a time.
    static let minimumCachedConnections = 256

    /// Grows libcurl's connection cache with the transfers running at once, so that under
    /// many concurrent requests an upstream connection is kept for the next request rather
    /// than closed and made anew with a TLS handshake. It stays within a quarter of the
    /// descriptor limit, and never shrinks: idle connections close after libcurl's maximum
    /// idle age.
    fileprivate func fitConnectionCache() {
        let wanted = min(2 * self.transfers.count, max(Self.minimumCachedConnections, DescriptorLimit.softLimit / 4))
        guard wanted > self.maximumCachedConnections else { return }
        self.maximumCachedConnections = wanted
        _ = tp_multi_setopt_long(self.multi, CURLMOPT_MAXCONNECTS, wanted)
    }

    /// How many engines `serve` runs unless told otherwise: one per processor, as nginx's
    /// `worker_processes auto` does, at most 8 (each engine keeps its own upstream
    /// connections, so more engines mean more idle connections to every upstream).
    package static var defaultCount: Int {
        min(8, max(1, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// `count` new engines (at least one), their threads named `tp-curl-N`.
    package static func make(count: Int) throws(SystemError) -> [CurlEngine] {
        var engines: [CurlEngine] = []
        for index in 0..<max(1, count) {
            engines.append(try CurlEngine(name: "tp-curl-\(index)"))
        }
        return engines
    }
}
