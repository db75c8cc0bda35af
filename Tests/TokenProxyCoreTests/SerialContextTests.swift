import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxySupport

/// Values appended from several threads, in the order the appends ran.
private final class OrderLog: Sendable {
    private let entries = Mutex<[Int]>([])

    func append(_ value: Int) {
        self.entries.withLockedValue { $0.append(value) }
    }

    var values: [Int] {
        self.entries.withLockedValue { $0 }
    }
}

struct SerialContextTests {
    /// Contexts made one after another are numbered in that order (other tests may make
    /// contexts in between, so only the order is certain).
    @Test func contextsAreNumberedInTheOrderTheyAreMade() {
        let contexts = (0..<8).map { _ in SerialContext(queue: DispatchQueue(label: "tokenproxy.test.ordinal")) }
        let ordinals = contexts.map(\.ordinal)
        #expect(zip(ordinals, ordinals.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func theGateIsExclusiveAndKnowsItsHolder() {
        let context = SerialContext(queue: DispatchQueue(label: "test.context"))
        #expect(!context.isCurrent)
        var inside = false
        var nestedRan = false
        var nestedInPlace = true
        context.run {
            inside = context.isCurrent
            // Already held here: run nests, an in-place attempt is refused rather than deadlocking.
            context.run { nestedRan = true }
            nestedInPlace = context.runIfIdle {}
        }
        #expect(inside)
        #expect(nestedRan)
        #expect(!nestedInPlace)
        #expect(!context.isCurrent)

        let holder = GateHolder(context)
        var ranWhileHeld = false
        #expect(!context.runIfIdle { ranWhileHeld = true })
        #expect(!ranWhileHeld)
        holder.release()
        #expect(eventually { context.runIfIdle {} })
    }

    @Test func handOffsRunInPlaceOnlyBehindEverythingTheyQueued() {
        let queue = DispatchQueue(label: "test.context.order")
        let context = SerialContext(queue: queue)
        let bound = QueueBound(OrderLog(), context: context)
        let producer = Producer()

        // Idle: the call runs at once, on this thread.
        producer.handOff(bound) { $0.append(0) }
        #expect(Self.values(bound) == [0])

        // Busy: calls 1 and 2 go to the queue, which is kept from running them.
        let queueBlocked = DispatchSemaphore(value: 0)
        let unblockQueue = DispatchSemaphore(value: 0)
        queue.async {
            queueBlocked.signal()
            unblockQueue.wait()
        }
        queueBlocked.wait()
        let holder = GateHolder(context)
        producer.handOff(bound) { $0.append(1) }
        producer.handOff(bound) { $0.append(2) }
        holder.release()

        // The gate is free now, but 1 and 2 have not run: 3 must wait behind them.
        #expect(eventually { context.runIfIdle {} })
        producer.handOff(bound) { $0.append(3) }
        #expect(Self.values(bound) == [0])

        unblockQueue.signal()
        queue.sync {}
        #expect(Self.values(bound) == [0, 1, 2, 3])

        // Everything queued has run: in place again.
        producer.handOff(bound) { $0.append(4) }
        #expect(Self.values(bound) == [0, 1, 2, 3, 4])
    }

    /// Work taken through ``SerialContext/runIfIdle(_:)`` runs in place, wherever it is
    /// called from; work run on the queue does not.
    @Test func onlyWorkTakenWhenIdleRunsInPlace() {
        let queue = DispatchQueue(label: "test.context.plain")
        let context = SerialContext(queue: queue)
        let inPlace = Mutex<[Bool]>([])
        queue.sync {
            _ = context.runIfIdle { inPlace.withLockedValue { $0.append(context.isHeldInPlace) } }
        }
        _ = context.runIfIdle { inPlace.withLockedValue { $0.append(context.isHeldInPlace) } }
        queue.sync {
            context.run { inPlace.withLockedValue { $0.append(context.isHeldInPlace) } }
        }
        #expect(inPlace.withLockedValue { $0 } == [true, true, false])
    }

    /// The log's entries, read holding its context; nil when the context is taken.
    private static func values(_ bound: QueueBound<OrderLog>) -> [Int]? {
        var values: [Int]?
        _ = bound.context.runIfIdle { values = bound.value.values }
        return values
    }
}

/// One producer's hand-offs to a bound value, run in place or queued in order as
/// ``ExchangeSink`` runs its deliveries.
private final class Producer: Sendable {
    private let producer = OrderedProducer()

    func handOff<Value>(_ bound: QueueBound<Value>, _ body: @escaping @Sendable (Value) -> Void) {
        if self.producer.runHereIfIdle(on: bound.context, { body(bound.value) }) {
            return
        }
        self.producer.willQueue()
        bound.context.async {
            self.producer.started()
            body(bound.value)
        }
    }
}
