import Synchronization

/// One producer's hand-offs to a ``SerialContext``, kept in order without allocating: a
/// hand-off runs in place (``runHereIfIdle(on:_:)``) only when the context is idle and none
/// of this producer's earlier hand-offs still waits on its queue. One that cannot run in place
/// is counted (``willQueue()``) and queued, and its block calls ``started()`` first.
///
/// The producer's calls never overlap (they may come from different threads, one after the
/// other, ordered by the caller's own lock): when the count reads 0, every block it queued
/// has started, and getting the gate then means they have also finished. Kept inline in its
/// owner, so a hand-off in place costs no closure context and no object.
package struct OrderedProducer: ~Copyable, Sendable {
    /// How many of its hand-offs wait on the queue.
    private let queued = Atomic<Int>(0)

    /// A producer with no hand-off waiting.
    package init() {}

    /// Runs `body` at once, holding `context`'s gate, when nothing of this producer waits on
    /// the queue and the gate is free; returns false, without running it, otherwise.
    package borrowing func runHereIfIdle(on context: SerialContext, _ body: () -> Void) -> Bool {
        self.queued.load(ordering: .acquiring) == 0 && context.runIfIdle(body)
    }

    /// Counts a hand-off about to be queued.
    package borrowing func willQueue() {
        self.queued.add(1, ordering: .relaxed)
    }

    /// Called first by a queued hand-off's block.
    package borrowing func started() {
        self.queued.subtract(1, ordering: .releasing)
    }
}

/// A weak reference to an object confined to one ``SerialContext``, to carry across a
/// `@Sendable` boundary (a token wait, a transfer's callbacks) without keeping the object
/// alive. A value: it lives inline in whatever holds it, with no object of its own.
///
/// `@unchecked Sendable` as ``QueueBound``: the object is only reachable through ``object``,
/// which checks that the caller holds the context's gate.
package struct WeakBound<Object: AnyObject>: @unchecked Sendable {
    private weak var storage: Object?
    /// The context that owns the object.
    package let context: SerialContext

    /// Refers to `object`, owned by `context`.
    package init(_ object: Object, context: SerialContext) {
        self.storage = object
        self.context = context
    }

    /// The object while it lives; the caller must hold the context.
    package var object: Object? {
        precondition(self.context.isCurrent, "a queue-bound reference was touched outside its context")
        return self.storage
    }

    /// Runs `body` with the object (or `nil`, once it has gone) on the context's queue.
    package func execute(_ body: @escaping @Sendable (Object?) -> Void) {
        self.context.async {
            body(self.storage)
        }
    }

    /// Runs `body` at once when the caller already holds the context, else on its queue.
    package func executeNowOrLater(_ body: @escaping @Sendable (Object?) -> Void) {
        if self.context.isCurrent {
            body(self.storage)
        } else {
            self.execute(body)
        }
    }
}
