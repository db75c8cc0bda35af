import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The execution context of one client connection: a serial Dispatch queue, and a gate that
/// whoever touches the connection's state holds.
///
/// Work normally runs on the queue, holding the gate. A thread that has something for the
/// connection (an upstream engine with an answer) may instead run it where it is when the
/// gate is free at that moment, saving a hop through the queue and a thread wake-up; when
/// the gate is taken it hands the work to the queue as usual, so it never waits for the
/// connection. Either way one thread at a time touches the state, and the gate's lock orders
/// its memory.
///
/// The queue's own handlers do not wait for such a holder either: one that finds the gate
/// taken leaves its work in a backlog and returns, so the Dispatch worker running it goes on
/// to other connections instead of sleeping on the lock for as long as the holder runs (or
/// is preempted). The holder hands the backlog to the queue when it lets go, and the queue
/// runs it, in arrival order, ahead of any later handler.
///
/// `@unchecked Sendable`: the gate serializes everything run through it; `owner` is only
/// written by the thread holding the gate, `inPlace` only touched by it, and the backlog is
/// behind a lock of its own.
package final class SerialContext: @unchecked Sendable {
    /// The queue that runs the connection's events and hand-offs.
    package let queue: DispatchQueue
    /// A plain pthread mutex: its trylock fails in user space, without a system call, which
    /// matters since a busy gate is the engines' everyday case.
    private let gate: UnsafeMutablePointer<pthread_mutex_t>
    /// The thread holding the gate, or 0.
    private let owner = Atomic<UInt>(0)
    /// Whether the holder took the gate through ``runIfIdle(_:)`` (in place, on a thread that
    /// is not the queue's); only touched by the holder.
    private var inPlace = false
    /// Guards ``backlog`` and ``drainQueued``; never held while running work.
    private let backlogLock: UnsafeMutablePointer<pthread_mutex_t>
    /// The queue's handlers that found the gate held, in arrival order.
    private var backlog: [() -> Void] = []
    /// Whether a drain of the backlog is already on the queue.
    private var drainQueued = false

    /// Creates a context over `queue`, which must be serial.
    package init(queue: DispatchQueue) {
        self.queue = queue
        self.gate = .allocate(capacity: 1)
        pthread_mutex_init(self.gate, nil)
        self.backlogLock = .allocate(capacity: 1)
        pthread_mutex_init(self.backlogLock, nil)
    }

    deinit {
        pthread_mutex_destroy(self.gate)
        self.gate.deallocate()
        pthread_mutex_destroy(self.backlogLock)
        self.backlogLock.deallocate()
    }

    /// Whether the calling thread holds the gate.
    package var isCurrent: Bool {
        self.owner.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Runs `body` on the queue, holding the gate.
    package func async(_ body: @escaping @Sendable () -> Void) {
        self.queue.async { self.run(body) }
    }

    /// Runs `body` holding the gate, for the queue's own event handlers: at once when the gate
    /// is free and no earlier handler waits in the backlog, otherwise later, from the backlog
    /// and on the queue, after the holder lets go. A caller already holding it just runs
    /// `body`.
    func run(_ body: @escaping () -> Void) {
        let thread = UInt(pthread_self())
        if self.owner.load(ordering: .relaxed) == thread {
            body()
            return
        }
        // The gate is tried under the backlog's lock, and a holder looks at the backlog under
        // it after letting go: either the attempt sees the gate free or the holder sees the
        // work, so nothing is left behind.
        pthread_mutex_lock(self.backlogLock)
        if self.backlog.isEmpty, pthread_mutex_trylock(self.gate) == 0 {
            pthread_mutex_unlock(self.backlogLock)
            self.hold(thread, body)
        } else {
            self.backlog.append(body)
            pthread_mutex_unlock(self.backlogLock)
        }
    }

    /// Runs the backlog on the queue, holding the gate; when another thread has taken the
    /// gate in between, it is left for that holder to hand back on release.
    private func drain() {
        pthread_mutex_lock(self.backlogLock)
        self.drainQueued = false
        guard pthread_mutex_trylock(self.gate) == 0 else {
            pthread_mutex_unlock(self.backlogLock)
            return
        }
        let work = self.backlog
        self.backlog = []
        pthread_mutex_unlock(self.backlogLock)
        self.hold(UInt(pthread_self())) {
            for body in work { body() }
        }
    }

    /// Runs `body` at once if the gate is free now; returns false, without running it, when
    /// another thread (or this one) holds it.
    func runIfIdle(_ body: () -> Void) -> Bool {
        guard pthread_mutex_trylock(self.gate) == 0 else { return false }
        self.inPlace = true
        self.hold(UInt(pthread_self())) {
            body()
            self.inPlace = false
        }
        return true
    }

    /// Whether the caller, which must hold the gate, runs in place on another thread
    /// (``runIfIdle(_:)``) rather than on the queue: work that may take long (parsing and
    /// routing the next request) is then handed to the queue.
    var isHeldInPlace: Bool {
        precondition(self.isCurrent)
        return self.inPlace
    }

    /// Runs `body` with the gate just taken by `thread`, then releases it and hands the
    /// backlog, if any, to the queue.
    private func hold(_ thread: UInt, _ body: () -> Void) {
        self.owner.store(thread, ordering: .relaxed)
        body()
        self.owner.store(0, ordering: .relaxed)
        pthread_mutex_unlock(self.gate)
        pthread_mutex_lock(self.backlogLock)
        let queueDrain = !self.backlog.isEmpty && !self.drainQueued
        if queueDrain { self.drainQueued = true }
        pthread_mutex_unlock(self.backlogLock)
        if queueDrain {
            self.queue.async { self.drain() }
        }
    }
}
