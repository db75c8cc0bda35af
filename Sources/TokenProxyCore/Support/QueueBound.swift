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
public final class SerialContext: @unchecked Sendable {
    /// The queue that runs the connection's events and hand-offs.
    public let queue: DispatchQueue
    /// A plain pthread mutex: its trylock fails in user space, without a system call, which
    /// matters since a busy gate is the engines' everyday case.
    private let gate: UnsafeMutablePointer<pthread_mutex_t>
    /// The thread holding the gate, or 0.
    private let owner = Atomic<UInt>(0)
    /// Whether the holder took the gate through ``runIfIdle(_:)`` (in place, on a thread that
    /// is not the queue's); only touched by the holder.
    private var inPlace = false

    /// Creates a context over `queue`, which must be serial.
    public init(queue: DispatchQueue) {
        self.queue = queue
        self.gate = .allocate(capacity: 1)
        pthread_mutex_init(self.gate, nil)
    }

    deinit {
        pthread_mutex_destroy(self.gate)
        self.gate.deallocate()
    }

    /// Whether the calling thread holds the gate.
    public var isCurrent: Bool {
        self.owner.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Runs `body` on the queue, holding the gate.
    public func async(_ body: @escaping @Sendable () -> Void) {
        self.queue.async { self.run(body) }
    }

    /// Runs `body` at once holding the gate, waiting for it if another thread holds it; for
    /// the queue's own event handlers. A caller already holding it just runs `body`.
    func run(_ body: () -> Void) {
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

    /// Runs `body` with the gate just taken by `thread`, then releases it.
    private func hold(_ thread: UInt, _ body: () -> Void) {
        self.owner.store(thread, ordering: .relaxed)
        body()
        self.owner.store(0, ordering: .relaxed)
        pthread_mutex_unlock(self.gate)
    }
}

/// Carries a value that is confined to one ``SerialContext`` across a `@Sendable` boundary.
///
/// `@unchecked Sendable` is sound because the value is only reachable through ``value``,
/// which checks that the caller holds the context's gate; a value may therefore travel to
/// another thread, but is only touched under its own context.
public struct QueueBound<Value>: @unchecked Sendable {
    private let storage: Value
    /// The context that owns the value.
    public let context: SerialContext

    /// Wraps `value`, owned by `context`.
    public init(_ value: Value, context: SerialContext) {
        self.storage = value
        self.context = context
    }

    /// The value; the caller must hold the context (run on its queue through it).
    public var value: Value {
        precondition(self.context.isCurrent, "a queue-bound value was touched outside its context")
        return self.storage
    }

    /// Runs `body` with the value on the owning queue, from any thread.
    public func execute(_ body: @escaping @Sendable (Value) -> Void) {
        self.context.async {
            body(self.storage)
        }
    }

    /// Runs `body` at once when the caller already holds the context, otherwise like
    /// ``execute(_:)``. Only for callers that hold no state `body` could reenter.
    public func executeNowOrLater(_ body: @escaping @Sendable (Value) -> Void) {
        if self.context.isCurrent {
            body(self.storage)
        } else {
            self.execute(body)
        }
    }

    /// Runs `body` at once on the calling thread when no thread holds the context and none
    /// of `producer`'s earlier calls still waits on the queue; otherwise like ``execute(_:)``.
    /// For one producer (an engine delivering a transfer's answer) whose calls never overlap,
    /// that must never wait for the connection and whose calls must run in order. Only for
    /// callers that hold no state `body` could reenter.
    func executeHereIfIdle(for producer: OrderedProducer, _ body: @escaping @Sendable (Value) -> Void) {
        let storage = self.storage
        // One producer whose calls never overlap (they may come from different threads, one
        // after the other, ordered by the engine's lock): when it reads 0, every call it
        // queued has started, and getting the gate then means they have also finished.
        if producer.queued.load(ordering: .acquiring) == 0, self.context.runIfIdle({ body(storage) }) {
            return
        }
        producer.queued.add(1, ordering: .relaxed)
        self.context.async {
            producer.queued.subtract(1, ordering: .releasing)
            body(self.storage)
        }
    }
}

/// One producer's calls into a ``SerialContext`` through
/// ``QueueBound/executeHereIfIdle(for:_:)``: how many of them wait on the queue, so that a
/// later call cannot run in place ahead of them.
final class OrderedProducer: Sendable {
    fileprivate let queued = Atomic<Int>(0)
}
