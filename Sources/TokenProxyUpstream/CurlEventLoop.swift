import CCurl
import CSystemShims
import Dispatch
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The event loop under a ``CurlEngine`` that runs on a serial Dispatch queue instead of a
/// thread of its own: libcurl's sockets in one epoll set, watched by one Dispatch read source
/// on that queue and drained in a batch per wake-up, and one timer source for libcurl's timer
/// (`CURLMOPT_TIMERFUNCTION`) and the transfers' deadlines. libcurl is driven with
/// `curl_multi_socket_action`, told of each socket's interest by `CURLMOPT_SOCKETFUNCTION`.
///
/// The client connections served by the same loop run their Dispatch sources on the same
/// queue, so an answer goes from libcurl's callback to the client's socket on the thread
/// that read it, without a hand-off.
///
/// Commands (add, resume, cancel) made on the queue run at once, or, while the engine is in
/// the middle of a turn (inside libcurl or delivering answers), at the end of it; commands
/// from other threads wait in a locked inbox, and the first of them schedules a turn.
///
/// `@unchecked Sendable`: everything but `inbox` and the immutable fields is touched only on
/// the queue.
final class CurlEventLoop: @unchecked Sendable {
    /// The loop's serial queue.
    let queue: DispatchQueue
    /// The queue's ``QueueMark``.
    private let mark: Int
    private let epoll: Int32
    private let readiness: DispatchSourceRead
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
    private var readyDescriptors = [Int32](repeating: 0, count: 64)
    private var readyFlags = [Int32](repeating: 0, count: 64)

    /// A loop on `queue`, which must be serial. Fails when no descriptor is left for the
    /// epoll set.
    init(queue: DispatchQueue) throws(SystemError) {
        let epoll = tp_epoll_create()
        guard epoll >= 0 else { throw SystemError(call: "epoll_create1", errno: errno) }
        self.queue = queue
        self.epoll = epoll
        self.mark = QueueMark.mark(queue)
        self.readiness = DispatchSource.makeReadSource(fileDescriptor: epoll, queue: queue)
        self.timer = DispatchSource.makeTimerSource(queue: queue)
    }

    /// Hooks the loop into `multi` and starts its sources. The sources keep `engine` alive,
    /// as an engine's thread does.
    func start(engine: CurlEngine, multi: UnsafeMutableRawPointer) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        _ = tp_multi_setopt_socket_callback(multi, loopSocketCallback, userdata)
        _ = tp_multi_setopt_timer_callback(multi, loopTimerCallback, userdata)
        self.readiness.setEventHandler { [self] in
            engine.drive(self) { self.takeReadiness(multi) }
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
        self.readiness.resume()
    }

    /// Whether the caller runs on the loop's queue.
    var isCurrent: Bool {
        QueueMark.current == self.mark
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

    /// Hands every ready socket to libcurl, in batches of up to 64.
    private func takeReadiness(_ multi: UnsafeMutableRawPointer) {
        while true {
            let count = self.readyDescriptors.withUnsafeMutableBufferPointer { descriptors in
                self.readyFlags.withUnsafeMutableBufferPointer { flags in
                    tp_epoll_ready(self.epoll, descriptors.baseAddress, flags.baseAddress, Int32(descriptors.count))
                }
            }
            guard count > 0 else { return }
            var running: Int32 = 0
            for index in 0..<Int(count) {
                curl_multi_socket_action(multi, self.readyDescriptors[index], self.readyFlags[index], &running)
            }
            if Int(count) < self.readyDescriptors.count { return }
        }
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
            tp_epoll_unwatch(self.epoll, descriptor)
        } else {
            let readable: Int32 = what & CURL_POLL_IN != 0 ? 1 : 0
            let writable: Int32 = what & CURL_POLL_OUT != 0 ? 1 : 0
            _ = tp_epoll_watch(self.epoll, descriptor, readable, writable)
        }
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
