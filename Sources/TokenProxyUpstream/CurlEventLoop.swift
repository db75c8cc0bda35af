import CCurl
import Dispatch
import Synchronization
import TokenProxySupport

/// What a ``CurlEngine`` that runs on an ``EventLoop`` instead of a thread of its own adds to
/// the loop: libcurl's sockets in the loop's epoll set (told of each socket's interest by
/// `CURLMOPT_SOCKETFUNCTION`), handed to `curl_multi_socket_action` together after each
/// batch of ready descriptors, and one timer source on the loop's queue for libcurl's timer
/// (`CURLMOPT_TIMERFUNCTION`) and the transfers' deadlines.
///
/// The client connections served by the same loop are in the same epoll set, so an answer
/// goes from libcurl's callback to the client's socket on the thread that read the request,
/// without a hand-off.
///
/// Commands (add, resume, cancel) made on the queue run at once, or, while the engine is in
/// the middle of a turn (inside libcurl or delivering answers), at the end of it; commands
/// from other threads wait in a locked inbox, and the first of them schedules a turn.
///
/// `@unchecked Sendable`: everything but `inbox` and the immutable fields is touched only on
/// the queue.
final class CurlEventLoop: @unchecked Sendable {
    /// The loop the engine runs on.
    let loop: EventLoop
    private let timer: DispatchSourceTimer
    private let inbox = Mutex<[CurlEngine.Command]>([])
    /// Whether the engine is in a turn (queue only).
    var driving = false
    /// Commands made on the queue during a turn (queue only).
    private var deferred: [CurlEngine.Command] = []
    /// Whether libcurl asked for `CURL_SOCKET_TIMEOUT` at once (queue only).
    private var timeoutDue = false
    /// When libcurl wants `CURL_SOCKET_TIMEOUT` next (queue only).
    private var curlDue: DispatchTime?
    /// When the timer source fires next, if it was scheduled (queue only).
    private var armed: DispatchTime?
    /// libcurl's sockets in the epoll set (queue only).
    private var watched = Set<Int32>()
    /// libcurl's sockets found ready in the current batch, with `CURL_CSELECT_*` flags (queue only).
    private var ready: [(Int32, Int32)] = []

    /// The engine's part of `loop`.
    init(loop: EventLoop) {
        self.loop = loop
        self.timer = DispatchSource.makeTimerSource(queue: loop.queue)
    }

    /// The loop's serial queue.
    var queue: DispatchQueue { self.loop.queue }

    /// Hooks the loop into `multi` and starts its timer. The loop keeps `engine` alive, as an
    /// engine's thread does.
    func start(engine: CurlEngine, multi: UnsafeMutableRawPointer) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        _ = tp_multi_setopt_socket_callback(multi, loopSocketCallback, userdata)
        _ = tp_multi_setopt_timer_callback(multi, loopTimerCallback, userdata)
        self.loop.queue.async { [self] in
            self.loop.afterEachBatch {
                guard !self.ready.isEmpty else { return }
                engine.drive(self) { engine.socketsReady(self.takeReady()) }
            }
        }
        self.timer.setEventHandler { [self] in
            self.armed = nil
            engine.drive(self) {
                if let due = self.curlDue, due <= .now() {
                    self.curlDue = nil
                    self.timeoutDue = true
                }
            }
        }
        self.timer.schedule(deadline: .distantFuture)
        self.timer.resume()
    }

    /// Whether the caller runs on the loop's queue.
    var isCurrent: Bool {
        self.loop.isCurrent
    }

    /// Takes `command` for `engine`: at once on the queue outside a turn, at the end of the
    /// turn inside one, through the inbox from another thread.
    func send(_ command: CurlEngine.Command, to engine: CurlEngine) {
        if self.isCurrent {
            if self.driving {
                self.deferred.append(command)
            } else {
                engine.drive(self) { self.deferred.append(command) }
            }
            return
        }
        let first = self.inbox.withLock { inbox -> Bool in
            inbox.append(command)
            return inbox.count == 1
        }
        if first {
            self.queue.async { engine.drive(self) {} }
        }
    }

    /// Moves the waiting commands into `pending` (empty on entry), those made on the queue first.
    func takeCommands(into pending: inout [CurlEngine.Command]) {
        swap(&pending, &self.deferred)
        let arrived = self.inbox.withLock { inbox -> [CurlEngine.Command] in
            guard !inbox.isEmpty else { return [] }
            defer { inbox.removeAll() }
            return inbox
        }
        pending.append(contentsOf: arrived)
    }

    /// Whether the turn must go round once more: commands made during it, or libcurl's timer
    /// due at once.
    var hasWork: Bool {
        !self.deferred.isEmpty || self.timeoutDue
    }

    /// Calls `curl_multi_socket_action` for libcurl's timer when it is due at once.
    func runDueTimeout(_ multi: UnsafeMutableRawPointer) {
        guard self.timeoutDue else { return }
        self.timeoutDue = false
        var running: Int32 = 0
        curl_multi_socket_action(multi, tp_socket_timeout(), 0, &running)
    }

    /// The sockets found ready in the batch, with `CURL_CSELECT_*` flags.
    private func takeReady() -> [(Int32, Int32)] {
        defer { self.ready.removeAll(keepingCapacity: true) }
        return self.ready
    }

    /// Schedules the timer source for libcurl's next timeout or `deadline` (a transfer's),
    /// whichever is first. A timer already due earlier is left: firing early costs one empty
    /// turn, which reschedules it.
    func arm(deadline: ContinuousClock.Instant?) {
        var target = self.curlDue
        if let deadline {
            let due = DispatchTime.after(deadline - .now)
            target = target.map { min($0, due) } ?? due
        }
        guard let target else { return }
        if let armed = self.armed, armed <= target { return }
        self.armed = target
        self.timer.schedule(deadline: target, leeway: .milliseconds(1))
    }

    /// libcurl's socket callback: `what` is `CURL_POLL_IN`, `_OUT`, `_INOUT` or `_REMOVE`
    /// (sent before libcurl closes the socket).
    fileprivate func watch(_ descriptor: Int32, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            self.loop.forget(descriptor, watched: self.watched.remove(descriptor) != nil)
            return
        }
        let inserted = self.watched.insert(descriptor).inserted
        // Registered every time: libcurl may have closed a socket of this number without a
        // `CURL_POLL_REMOVE` and another owner may have had the number since.
        self.loop.register(descriptor) { [unowned self] readiness in
            self.ready.append((descriptor, readiness.rawValue))
        }
        self.loop.watch(
            descriptor,
            readable: what & CURL_POLL_IN != 0,
            writable: what & CURL_POLL_OUT != 0,
            watched: !inserted
        )
    }

    /// libcurl's timer callback: -1 stops the timer, 0 asks for a timeout action at once
    /// (run at the end of the current step of the turn), more for one that many ms from now.
    fileprivate func setTimer(milliseconds: Int) {
        switch milliseconds {
        case ..<0:
            self.curlDue = nil
        case 0:
            self.curlDue = nil
            self.timeoutDue = true
        default:
            self.curlDue = .now() + .milliseconds(min(milliseconds, Int(Int32.max)))
        }
    }
}

private let loopSocketCallback: tp_socket_callback = { _, descriptor, what, userdata, _ in
    guard let userdata else { return -1 }
    Unmanaged<CurlEventLoop>.fromOpaque(userdata).takeUnretainedValue().watch(descriptor, what)
    return 0
}

private let loopTimerCallback: tp_timer_callback = { _, milliseconds, userdata in
    guard let userdata else { return -1 }
    Unmanaged<CurlEventLoop>.fromOpaque(userdata).takeUnretainedValue().setTimer(milliseconds: milliseconds)
    return 0
}
