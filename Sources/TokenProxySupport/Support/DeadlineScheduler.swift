import Dispatch
import Synchronization

/// Runs short actions at deadlines on the monotonic clock, from one thread of its own
/// (`tp-deadlines`), started at the first use.
///
/// It needs no descriptor: libdispatch's timers need its event thread's epoll set, which a
/// process out of descriptors cannot make (libdispatch then stops the process), while a
/// deadline must hold precisely when resources are short. Actions run one after the other,
/// in the order of their deadlines, on that thread: they must be short and never block, so
/// one that ends a wait takes the waiter out and hands its completion (the caller's code)
/// to a queue rather than calling it here.
package final class DeadlineScheduler: Sendable {
    /// The scheduler the proxy's deadlines share.
    package static let shared = DeadlineScheduler(name: "tp-deadlines")

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private struct State {
        /// Pending entries as a binary min-heap on the deadline: adding one and taking the
        /// earliest cost a logarithm of their number, however many wait.
        var heap: [Entry] = []
        var started = false

        mutating func push(_ entry: Entry) {
            self.heap.append(entry)
            var child = self.heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard self.heap[child].deadline < self.heap[parent].deadline else { break }
                self.heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popEarliest() -> Entry? {
            guard !self.heap.isEmpty else { return nil }
            self.heap.swapAt(0, self.heap.count - 1)
            let earliest = self.heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < self.heap.count, self.heap[left].deadline < self.heap[smallest].deadline {
                    smallest = left
                }
                if right < self.heap.count, self.heap[right].deadline < self.heap[smallest].deadline {
                    smallest = right
                }
                guard smallest != parent else { break }
                self.heap.swapAt(parent, smallest)
                parent = smallest
            }
            return earliest
        }
    }

    private let name: String
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// A scheduler whose thread is named `name`.
    init(name: String) {
        self.name = name
    }

    /// Runs `action` once `deadline` has passed (at once when it has already).
    package func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) {
        let (start, earliest) = self.state.withLockedValue { state -> (Bool, Bool) in
            state.push(Entry(deadline: deadline, action: action))
            let start = !state.started
            state.started = true
            return (start, state.heap.first?.deadline == deadline)
        }
        if start {
            NamedThread.start(named: self.name) { [self] in self.run() }
        } else if earliest {
            self.wake.signal()
        }
    }

    private func run() {
        while true {
            let now = ContinuousClock.now
            let (due, next) = self.state.withLockedValue { state -> ([Entry], ContinuousClock.Instant?) in
                var due: [Entry] = []
                while let earliest = state.heap.first, earliest.deadline <= now, let entry = state.popEarliest() {
                    due.append(entry)
                }
                return (due, state.heap.first?.deadline)
            }
            for entry in due {
                entry.action()
            }
            guard let next else {
                self.wake.wait()
                continue
            }
            // At most a second at a time: the semaphore counts time on a clock that stops
            // while the machine sleeps, the deadlines on one that does not, so after a
            // suspend a deadline is late by a second at most.
            let remaining = min(next - ContinuousClock.now, .seconds(1))
            guard remaining > .zero else { continue }
            _ = self.wake.wait(timeout: .after(remaining))
        }
    }
}
