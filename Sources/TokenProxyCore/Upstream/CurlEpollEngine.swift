import CCurl
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// libcurl's multi interface on its socket API (`curl_multi_socket_action`): libcurl's socket
/// callback keeps an epoll set up to date, and one event thread waits on it.
///
/// The multi handle is behind a mutex rather than owned by the thread. The event thread takes
/// it with a blocking lock after each wait. Any other thread that has work for the engine (a
/// Dispatch worker starting a transfer it just parsed, a client connection resuming a paused
/// one) puts it in an inbox while the event thread is awake, since the thread reads the inbox
/// before it waits again. While the thread waits, the caller tries the lock: when it is free,
/// the caller drives libcurl itself (the request goes upstream without waking the thread);
/// when it is taken, the work goes to the inbox and the thread is woken. So no thread other
/// than the event thread ever waits for the engine, and the event thread only waits for
/// another holder's bounded turn.
///
/// Whoever holds the mutex runs libcurl's callbacks and hands the transfers' answers to their
/// client connections before letting go, as the poll engine does at the end of its turn.
///
/// A kept-alive upstream connection is un-watched by libcurl when its transfer ends and
/// watched again when the next request reuses it. Doing that in the epoll set would cost
/// three `epoll_ctl` calls per request; instead a socket libcurl stops watching stays in the
/// set, marked unwanted, and is only taken out if an event arrives for it meanwhile (the
/// upstream closed the idle connection). libcurl closes its sockets through
/// `CURLOPT_CLOSESOCKETFUNCTION`, so the table forgets a socket before its number can be
/// reused.
///
/// `@unchecked Sendable`: the multi handle, `transfers`, `outboxes`, `timerDue` and the easy
/// pool are touched only with `lock` held; the inbox is behind its own mutex; epoll and the
/// eventfd are thread-safe.
public final class CurlEpollEngine: CurlEngine, @unchecked Sendable {
    /// Commands that could not run at once, and whether the event thread is (about to be)
    /// waiting with none of them seen: only then does a command need a wake-up.
    private struct Inbox {
        var commands: [CurlCommand] = []
        var sleeping = false
    }

    private let multi: UnsafeMutableRawPointer
    private let epoll: Int32
    private let wakeup: Int32
    /// How many times the event thread went round its loop (tests: an idle engine sleeps).
    let turns = Atomic<Int>(0)
    /// Guards libcurl and the state below. A plain pthread mutex: its trylock fails in user
    /// space when it is taken.
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let inbox = Mutex(Inbox())

    /// A socket in the epoll set: the events it is registered for, and whether libcurl
    /// currently wants them.
    private struct Watch {
        var what: Int32
        var wanted: Bool
    }

    // With `lock` held.
    private var watches: [curl_socket_t: Watch] = [:]
    private var transfers: [ObjectIdentifier: CurlTransfer] = [:]
    /// Transfers with something for their client, delivered before the lock is released.
    private var outboxes: [CurlTransfer] = []
    /// When libcurl wants `CURL_SOCKET_TIMEOUT` run, as its timer callback last said.
    private var timerDue: ContinuousClock.Instant?
    /// When the event thread's current wait ends; another holder that sets something due
    /// earlier wakes it.
    private var wakesAt: ContinuousClock.Instant = .now
    private var easyPool = CurlEasyPool()

    private var thread: Thread?
    /// The longest the thread waits with nothing due.
    private let idleWait: Duration

    /// Creates an engine and starts its event thread. `idleWait` only bounds a wait with
    /// nothing due (tests make it long, so that a missed wake-up shows as a hang).
    public init(name: String = "tp-curl", idleWait: Duration = .seconds(1)) {
        self.idleWait = max(idleWait, .milliseconds(1))
        CurlGlobal.initialize()
        // Safe because these only fail when the process is out of memory or descriptors at
        // start-up, where nothing can go on.
        guard let multi = curl_multi_init() else { preconditionFailure("curl_multi_init failed") }
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        let wakeup = tp_epoll_add_wakeup(epoll)
        precondition(wakeup >= 0, "eventfd failed: errno \(errno)")
        self.multi = multi
        self.epoll = epoll
        self.wakeup = wakeup
        self.lock = .allocate(capacity: 1)
        pthread_mutex_init(self.lock, nil)
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        _ = tp_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 256)
        _ = tp_multi_setopt_socket_callback(multi, epollSocketCallback)
        _ = tp_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, userdata)
        _ = tp_multi_setopt_timer_callback(multi, epollTimerCallback)
        _ = tp_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, userdata)
        self.thread = NamedThread.start(named: name) { [self] in self.run() }
    }

    /// Starts `transfer`: at once on the calling thread when the engine is free, otherwise on
    /// the engine's next turn. Its callbacks run with the engine's lock held from now on.
    public func add(_ transfer: CurlTransfer) {
        self.submit(.add(transfer))
    }

    /// Resumes a transfer one of whose directions was paused for lack of data or room.
    public func resume(_ transfer: CurlTransfer) {
        self.submit(.resume(transfer))
    }

    /// Stops a transfer: its upstream connection is closed if the exchange was incomplete.
    public func cancel(_ transfer: CurlTransfer) {
        self.submit(.cancel(transfer))
    }

    /// Called with the lock held by a transfer that collected something for its client.
    public func outboxReady(_ transfer: CurlTransfer) {
        self.outboxes.append(transfer)
    }

    /// Routes socket closing through ``closeSocket(_:)``, so that the socket table never
    /// outlives a socket.
    public func configure(_ easy: UnsafeMutableRawPointer) {
        _ = tp_easy_setopt_closesocket_callback(easy, epollCloseSocketCallback)
        _ = tp_easy_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A reused or new easy handle (lock held).
    public func takeEasyHandle() -> UnsafeMutableRawPointer? {
        self.easyPool.take()
    }

    /// Keeps `easy` for the next transfer (lock held).
    public func recycle(_ easy: UnsafeMutableRawPointer) {
        self.easyPool.recycle(easy)
    }

    // MARK: Commands

    private func submit(_ command: CurlCommand) {
        // An awake event thread reads the inbox before it waits again: no wake-up, and no
        // contention for the lock it is about to take.
        let awake = self.inbox.withLock { inbox -> Bool in
            guard !inbox.sleeping else { return false }
            inbox.commands.append(command)
            return true
        }
        if awake {
            return
        }
        if pthread_mutex_trylock(self.lock) == 0 {
            self.apply(command)
            self.settle()
            let wake = self.nextDue() < self.wakesAt
            pthread_mutex_unlock(self.lock)
            if wake {
                self.wake()
            }
            return
        }
        let wake = self.inbox.withLock { inbox -> Bool in
            inbox.commands.append(command)
            // One wake-up per wait: the first command after the thread went to sleep.
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if wake {
            self.wake()
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(self.wakeup, &one, MemoryLayout<UInt64>.size)
    }

    private func apply(_ command: CurlCommand) {
        CurlMulti.apply(command, engine: self, multi: self.multi, transfers: &self.transfers)
    }

    /// With the lock held: runs libcurl's due timer, finishes what libcurl finished, delivers
    /// outboxes, and repeats while deliveries (which may resume or cancel transfers of this
    /// engine) or other threads left commands in the inbox.
    private func settle() {
        var pending: [CurlCommand] = []
        while true {
            while let due = self.timerDue, due <= .now {
                self.timerDue = nil
                var running: Int32 = 0
                curl_multi_socket_action(self.multi, tp_socket_timeout(), 0, &running)
            }
            CurlMulti.collectFinished(self.multi) { self.finish($0, timedOut: false) }
            if !self.outboxes.isEmpty {
                // One hand-off per transfer per turn, however many callbacks it had.
                let ready = self.outboxes
                self.outboxes.removeAll(keepingCapacity: true)
                for transfer in ready {
                    transfer.deliverOutbox()
                }
            }
            self.inbox.withLock { swap(&pending, &$0.commands) }
            if pending.isEmpty, self.outboxes.isEmpty, self.timerDue.map({ $0 > .now }) ?? true {
                return
            }
            for command in pending {
                self.apply(command)
            }
            pending.removeAll(keepingCapacity: true)
        }
    }

    // MARK: The event thread

    private func run() {
        let capacity = 64
        var fds = [Int32](repeating: 0, count: capacity)
        var masks = [Int32](repeating: 0, count: capacity)
        var wait: Int32 = 0
        while true {
            let count = tp_epoll_wait(self.epoll, &fds, &masks, Int32(capacity), wait)
            self.turns.add(1, ordering: .relaxed)
            pthread_mutex_lock(self.lock)
            self.inbox.withLock { $0.sleeping = false }
            for index in 0..<max(0, Int(count)) {
                if fds[index] == self.wakeup {
                    var value: UInt64 = 0
                    _ = Glibc.read(self.wakeup, &value, MemoryLayout<UInt64>.size)
                    continue
                }
                let socket = fds[index]
                guard self.watches[socket]?.wanted == true else {
                    // Parked after libcurl stopped watching it, and now readable or closed:
                    // out of the set until libcurl wants it again.
                    self.watches[socket] = nil
                    tp_epoll_forget(self.epoll, socket)
                    continue
                }
                var running: Int32 = 0
                curl_multi_socket_action(self.multi, socket, masks[index], &running)
            }
            self.checkDeadlines()
            self.settle()
            let now = ContinuousClock.now
            let due = self.nextDue()
            // Commands that came in while this turn ran are taken without sleeping; otherwise
            // the next command wakes the thread.
            let sleep = self.inbox.withLock { inbox -> Bool in
                inbox.sleeping = inbox.commands.isEmpty
                return inbox.sleeping
            }
            if !sleep || due <= now {
                wait = 0
                self.wakesAt = now
            } else {
                let milliseconds = (due - now).milliseconds + 1
                wait = Int32(min(milliseconds, Int64(Int32.max)))
                self.wakesAt = due
            }
            pthread_mutex_unlock(self.lock)
        }
    }

    /// The earliest of libcurl's timer, the transfers' first-byte deadlines and the idle
    /// bound (lock held).
    private func nextDue() -> ContinuousClock.Instant {
        var due = self.timerDue ?? .now + self.idleWait
        for transfer in self.transfers.values {
            if let deadline = transfer.firstByteDeadline, deadline < due {
                due = deadline
            }
        }
        return due
    }

    private func checkDeadlines() {
        let now = ContinuousClock.now
        for transfer in self.transfers.values {
            if let deadline = transfer.firstByteDeadline, deadline <= now {
                self.finish(transfer, timedOut: true)
            }
        }
    }

    private func finish(_ transfer: CurlTransfer, timedOut: Bool) {
        CurlMulti.finish(transfer, timedOut: timedOut, multi: self.multi, transfers: &self.transfers)
    }

    // MARK: libcurl callbacks (lock held, inside libcurl calls)

    fileprivate func watch(_ socket: curl_socket_t, what: Int32) {
        if what == tp_poll_remove() {
            // Parked: left in the epoll set (see the type's comment).
            self.watches[socket]?.wanted = false
            return
        }
        if let watch = self.watches[socket], watch.what == what {
            self.watches[socket]?.wanted = true
            return
        }
        var failure = tp_epoll_watch(self.epoll, socket, what, self.watches[socket] == nil ? 1 : 0)
        if failure == ENOENT || failure == EEXIST {
            // The table and the set disagree (cannot happen while every close goes through
            // `closeSocket`); the set is the truth.
            failure = tp_epoll_watch(self.epoll, socket, what, failure == ENOENT ? 1 : 0)
        }
        if failure == 0 {
            self.watches[socket] = Watch(what: what, wanted: true)
        } else {
            // A socket that cannot be watched would stall its transfer; a timer tick makes
            // libcurl look at it (and time it out) instead.
            self.watches[socket] = nil
            self.timerDue = min(self.timerDue ?? .now + .milliseconds(10), .now + .milliseconds(10))
        }
    }

    fileprivate func closeSocket(_ socket: curl_socket_t) -> Int32 {
        if self.watches.removeValue(forKey: socket) != nil {
            tp_epoll_forget(self.epoll, socket)
        }
        return Glibc.close(socket)
    }

    fileprivate func setTimer(_ milliseconds: Int) {
        // libcurl must not be called from inside its own callback; `settle` and the event
        // thread run a due timer once the current call returned.
        self.timerDue = milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
    }
}

private func epollEngine(_ userdata: UnsafeMutableRawPointer?) -> CurlEpollEngine? {
    userdata.map { Unmanaged<CurlEpollEngine>.fromOpaque($0).takeUnretainedValue() }
}

private let epollSocketCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_socket_t, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
        -> Int32 = { _, socket, what, userdata, _ in
            epollEngine(userdata)?.watch(socket, what: what)
            return 0
        }

private let epollTimerCallback: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32 = {
    _,
    milliseconds,
    userdata in
    epollEngine(userdata)?.setTimer(milliseconds)
    return 0
}

private let epollCloseSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t) -> Int32 = {
    userdata,
    socket in
    epollEngine(userdata)?.closeSocket(socket) ?? Glibc.close(socket)
}
