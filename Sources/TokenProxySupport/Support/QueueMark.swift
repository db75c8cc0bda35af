import Dispatch
import Synchronization

/// Marks the serial queues of event loops, so that code can tell whether it runs on a given
/// loop's queue (through `DispatchQueue.getSpecific`, which also sees the queue a block runs
/// on when that block was submitted to a queue targeting it).
///
/// An upstream engine that runs on a loop's queue takes commands from that queue at once
/// rather than through its inbox, and a connection served by that loop counts work the
/// engine runs for it as running on its own queue.
package enum QueueMark {
    /// The key the marks are stored under.
    private static let key = DispatchSpecificKey<Int>()
    private static let counter = Atomic<Int>(0)

    /// Marks `queue` with a new number and returns it.
    package static func mark(_ queue: DispatchQueue) -> Int {
        let number = self.counter.add(1, ordering: .relaxed).newValue
        queue.setSpecific(key: self.key, value: number)
        return number
    }

    /// The mark of `queue`, if it has one.
    package static func mark(of queue: DispatchQueue) -> Int? {
        queue.getSpecific(key: self.key)
    }

    /// The mark of the queue the calling code runs on, if it has one.
    package static var current: Int? {
        DispatchQueue.getSpecific(key: self.key)
    }
}
