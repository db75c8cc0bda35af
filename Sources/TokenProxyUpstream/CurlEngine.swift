import CCurl
import CSystemShims
import Foundation
import Synchronization
import TokenProxySupport

/// What drives libcurl transfers: libcurl's multi interface on one event thread: the thread sleeps in `curl_multi_poll`,
/// drives transfers with `curl_multi_perform`, and takes commands (add, resume, cancel) from
/// other threads through a locked inbox, with an eventfd that `curl_multi_poll` also watches
/// to wake it when it sleeps.
///
/// Every libcurl call on the multi handle and its easy handles happens on this thread; the
/// transfers' callbacks run there too and hand data to client connections through their
/// queues. Connections to upstreams are cached by the multi handle and reused across client
/// requests; HTTP/2 is negotiated by ALPN and multiplexed. `docs/contributing/architecture.md` explains
/// why this design was kept over two others that were measured.
///
/// `@unchecked Sendable`: each field says what guards it. The `var` fields and the multi
/// handle are touched only on the event thread; the inbox is behind its mutex; writing the
/// eventfd is thread-safe.
package final class CurlEngine: @unchecked Sendable {
    /// What another thread asks of the engine.
    enum Command {
        case add(CurlTransfer)
        case resume(CurlTransfer)
        case cancel(CurlTransfer)
    }

    /// Commands from other threads, and whether the event thread is (about to be) asleep
    /// in `curl_multi_poll` with none of them seen: only then does a command need a wake-up.
    struct Inbox {
        var commands: [Command] = []
        var sleeping = false
    }

    /// The multi handle (engine thread only).
    let multi: UnsafeMutableRawPointer
    /// The wake-up eventfd `curl_multi_poll` watches besides libcurl's sockets. It replaces
    /// `curl_multi_wakeup`, which in libcurl 7.88 is a socket pair: a `send` that allocates a
    /// socket buffer on the waking thread, and two reads on this one (the byte, then the
    /// `EAGAIN` that shows the pair drained); an eventfd is one write and one read.
    private let wakeup: Int32
    /// Commands from other threads (guarded by its mutex).
    let inbox = Mutex(Inbox())
    /// The running transfers, which the table keeps alive (engine thread only).
    private var transfers: [ObjectIdentifier: CurlTransfer] = [:]
    /// Transfers with something for their client, delivered at the end of the loop iteration
    /// (engine thread only).
    private var outboxes: [CurlTransfer] = []
    /// The event thread; written once in `init`, never read.
    private var thread: Thread?
    /// Idle easy handles (engine thread only).
    private var easyPool = CurlEasyPool()
    /// No transfer's deadline (first byte or idle body) is earlier than this (engine thread only). It may
    /// belong to a transfer that has its answer by now; the transfers are only scanned once
    /// it has passed, not on every turn of the loop.
    private var earliestDeadline: ContinuousClock.Instant?
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
        guard let multi = curl_multi_init() else {
            close(wakeup)
            throw SystemError(call: "curl_multi_init", errno: ENOMEM)
        }
        self.multi = multi
        self.wakeup = wakeup
        _ = tp_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, CurlEngine.minimumCachedConnections)
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

    private func run() {
        var running: Int32 = 0
        var pending: [Command] = []
        while true {
            self.inbox.withLockedValue { inbox in
                swap(&pending, &inbox.commands)
                inbox.sleeping = false
            }
            for command in pending {
                self.apply(command)
            }
            pending.removeAll(keepingCapacity: true)
            curl_multi_perform(self.multi, &running)
            self.collectFinished()
            let now = ContinuousClock.now
            var timeout = self.idleWaitMilliseconds
            if let earliest = self.earliestDeadline, earliest <= now {
                self.expireDeadlines(now: now)
            }
            if let earliest = self.earliestDeadline {
                timeout = min(timeout, Int((earliest - now).milliseconds) + 1)
            }
            // One hop per transfer per iteration, however many callbacks it had.
            for transfer in self.outboxes {
                transfer.deliverOutbox()
            }
            self.outboxes.removeAll(keepingCapacity: true)
            // Commands that came in while this turn ran are taken without sleeping; otherwise
            // the next command wakes the thread.
            let sleep = self.inbox.withLockedValue { inbox -> Bool in
                inbox.sleeping = inbox.commands.isEmpty
                return inbox.sleeping
            }
            var ready: Int32 = 0
            var wakeup = curl_waitfd(fd: self.wakeup, events: Int16(CURL_WAIT_POLLIN), revents: 0)
            curl_multi_poll(self.multi, &wakeup, 1, sleep ? Int32(timeout) : 0, &ready)
            if wakeup.revents != 0 {
                var value: UInt64 = 0
                _ = Glibc.read(self.wakeup, &value, MemoryLayout<UInt64>.size)
            }
        }
    }

    /// A transfer's deadline was set to `deadline`. A later deadline than the earliest known
    /// needs nothing: the scan once the earliest passed finds it.
    func deadlineSet(_ deadline: ContinuousClock.Instant) {
        if self.earliestDeadline.map({ deadline < $0 }) ?? true {
            self.earliestDeadline = deadline
        }
    }

    /// Ends the transfers whose first byte or next body byte is overdue, and finds the next
    /// deadline.
    private func expireDeadlines(now: ContinuousClock.Instant) {
        var next: ContinuousClock.Instant?
        for transfer in self.transfers.values {
            guard let deadline = transfer.deadline else { continue }
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
            self.transfers[ObjectIdentifier(transfer)] = transfer
            self.fitConnectionCache()
            easy.add(to: self.multi)
        case .resume(let transfer):
            guard self.transfers[ObjectIdentifier(transfer)] != nil else { return }
            transfer.unpause()
        case .cancel(let transfer):
            guard let easy = transfer.easy, self.transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil
            else {
                return
            }
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
    /// transfers held it alive until now.
    private func finish(_ transfer: CurlTransfer, result: CURLcode?) {
        guard let easy = transfer.easy, self.transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil else {
            return
        }
        easy.remove(from: self.multi)
        transfer.complete(result: result)
        transfer.release()
    }
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
