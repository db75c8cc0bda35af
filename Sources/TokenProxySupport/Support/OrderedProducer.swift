import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One producer's calls into a ``SerialContext`` through
/// ``QueueBound/executeHereIfIdle(for:_:)``: how many of them wait on the queue, so that a
/// later call cannot run in place ahead of them.
package final class OrderedProducer: Sendable {
    /// How many of its calls wait on the queue.
    let queued = Atomic<Int>(0)

    /// A producer with no call waiting.
    package init() {}
}
