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
/// `@unchecked Sendable`: the gate serializes everything run through it; `owner` is only
/// written by the thread holding the gate.
package final class SerialContext: @unchecked Sendable {
    /// The queue that runs the connection's events and hand-offs.
    package let queue: DispatchQueue
    /// A plain pthread mutex: its trylock fails in user space, without a system call, which
    /// matters since a busy gate is the engines' everyday case.
    private let gate: UnsafeMutablePointer<pthread_mutex_t>
    /// The thread holding the gate, or 0: atomic, and written only by the thread that holds
    /// the gate.
    private let owner = Atomic<UInt>(0)
    /// Whether the holder took the gate through ``runIfIdle(_:)`` (in place, on a thread that
    /// is not the queue's); guarded by `gate`: only the thread holding it reads or writes it.
    private var inPlace = false

    /// The order in which the context was made, counted over the process (wrapping): for
    /// spreading contexts evenly, in turn, over a fixed set of resources, as the forwarder
    /// spreads client connections over its engines.
    package let ordinal: UInt
    private static let made = Atomic<UInt>(0)

    /// Creates a context over `queue`, which must be serial.
    package init(queue: DispatchQueue) {
        self.ordinal = Self.made.wrappingAdd(1, ordering: .relaxed).oldValue
        self.queue = queue
        self.gate = .allocate(capacity: 1)
        pthread_mutex_init(self.gate, nil)
    }

    deinit {
        pthread_mutex_destroy(self.gate)
        self.gate.deallocate()
    }

    /// Whether the calling thread holds the gate.
    package var isCurrent: Bool {
        self.owner.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Runs `body` on the queue, holding the gate.
    package func async(_ body: @escaping @Sendable () -> Void) {
        self.queue.async { self.run(body) }
    }

    /// Runs `body` at once holding the gate, waiting for it if another thread holds it; for
    /// the queue's own event handlers. A caller already holding it just runs `body`.
    package func run(_ body: () -> Void) {
        let thread = UInt(pthread_self())
        if self.owner.load(ordering: .relaxed) == thread {
            body()
            return
        }
        pthread_mutex_lock(self.gate)
        self.hold(thread, body)
    }

    /// Runs `body` at once if the gate is free now; returns false, without running it, when
    /// another thread (or this one) holds it.
    package func runIfIdle(_ body: () -> Void) -> Bool {
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
    package var isHeldInPlace: Bool {
        precondition(self.isCurrent)
        return self.inPlace
    }

    /// Runs `body` with the gate just taken by `thread`, then releases it.
    private func hold(_ thread: UInt, _ body: () -> Void) {
        self.owner.store(thread, ordering: .relaxed)
        body()
        self.owner.store(0, ordering: .relaxed)
        pthread_mutex_unlock(self.gate)
    }
}
