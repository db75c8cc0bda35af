import Dispatch
import Synchronization

/// Threads for work that blocks: credential work (token requests, `command` runs, the token
/// store; `tp-credential`) and the connect phase of upgraded connections (`tp-tunnel`).
///
/// Each job gets a thread at once, one kept idle from an earlier job or a new one, so a job
/// that hangs never holds up another (each job ends by its own deadline). Blocking work never
/// runs on a Dispatch worker, which would be one fewer for connections. Up to ``idleLimit``
/// threads wait for the next job instead of ending: under steady use no thread is started
/// per job.
package final class BlockingWorker: Sendable {
    /// How many idle threads wait for work; past that a thread whose job ended ends too.
    package let idleLimit: Int

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        /// Idle threads waiting on `wake` that no job has claimed yet.
        var idle = 0
        /// Threads alive, running a job or idle (tests).
        var threads = 0
    }

    private let name: String
    private let state = Mutex(State())
    /// Signalled once per job handed to an idle thread.
    private let wake = DispatchSemaphore(value: 0)

    /// A worker whose threads are named `name` (at most 15 bytes reach the OS).
    package init(name: String, idleLimit: Int = 4) {
        self.name = name
        self.idleLimit = idleLimit
    }

    /// Runs `job` on one of the worker's threads, now.
    package func run(_ job: @escaping @Sendable () -> Void) {
        let start = self.state.withLockedValue { state -> Bool in
            state.jobs.append(job)
            guard state.idle > 0 else {
                state.threads += 1
                return true
            }
            state.idle -= 1
            return false
        }
        if start {
            NamedThread.start(named: self.name) { [self] in self.serve() }
        } else {
            self.wake.signal()
        }
    }

    /// The number of threads alive, and how many of them wait idle (tests).
    package var threadCount: (alive: Int, idle: Int) {
        self.state.withLockedValue { ($0.threads, $0.idle) }
    }

    /// A thread's life: the job it was started or woken for, then the next, until it is
    /// not wanted idle.
    private func serve() {
        while true {
            // Every start and every signal goes with one job appended, so one is there.
            let job = self.state.withLockedValue { state in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            job?()
            let stay = self.state.withLockedValue { state -> Bool in
                guard state.idle < self.idleLimit else {
                    state.threads -= 1
                    return false
                }
                state.idle += 1
                return true
            }
            guard stay else { return }
            self.wake.wait()
        }
    }
}
