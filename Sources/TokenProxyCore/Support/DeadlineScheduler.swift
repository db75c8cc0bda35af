import Dispatch
import Synchronization

/// Runs short actions at deadlines on the monotonic clock, from one thread of its own
/// (`tp-deadlines`), started at the first use.
///
/// It needs no descriptor: libdispatch's timers need its event thread's epoll set, which a
/// process out of descriptors cannot make (libdispatch then stops the process), while a
/// deadline must hold precisely when resources are short. Actions run one after the other
/// and must be short and never block: they end a wait and hand the result on.
final class DeadlineScheduler: Sendable {
    /// The scheduler the proxy's deadlines share.
    static let shared = DeadlineScheduler(name: "tp-deadlines")

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private struct State {
        /// Pending entries, earliest last (taken from the end).
        var entries: [Entry] = []
        var started = false
    }

    private let name: String
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// A scheduler whose thread is named `name`.
    init(name: String) {
        self.name = name
    }

    /// Runs `action` once `deadline` has passed (at once when it has already).
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) {
        let (start, earliest) = self.state.withLock { state -> (Bool, Bool) in
            // Binary search for the slot that keeps the array sorted latest-first.
            var low = 0
            var high = state.entries.count
            while low < high {
                let middle = (low + high) / 2
                if state.entries[middle].deadline > deadline {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            state.entries.insert(Entry(deadline: deadline, action: action), at: low)
            let start = !state.started
            state.started = true
            return (start, low == state.entries.count - 1)
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
            let (due, next) = self.state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
                var due: [Entry] = []
                while let last = state.entries.last, last.deadline <= now {
                    due.append(last)
                    state.entries.removeLast()
                }
                return (due, state.entries.last?.deadline)
            }
            for entry in due {
                entry.action()
            }
            guard let next else {
                self.wake.wait()
                continue
            }
            let remaining = next - ContinuousClock.now
            guard remaining > .zero else { continue }
            let (seconds, attoseconds) = remaining.components
            let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
            _ = self.wake.wait(timeout: .now() + .nanoseconds(max(1, nanoseconds)))
        }
    }
}
