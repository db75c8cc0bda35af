import Dispatch
import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials

/// The credential threads: a job that blocks never holds up another, and idle threads are
/// kept for the next jobs, up to a limit.
struct CredentialWorkerTests {
    @Test func aBlockedJobNeverHoldsUpTheNextOne() {
        let worker = CredentialWorker(name: "tp-test-cred")
        let release = DispatchSemaphore(value: 0)
        let finished = Mutex<[String]>([])
        worker.run {
            release.wait()
            finished.withLockedValue { $0.append("blocked") }
        }
        worker.run { finished.withLockedValue { $0.append("next") } }
        #expect(eventually { finished.withLockedValue { $0 } == ["next"] })
        release.signal()
        #expect(eventually { finished.withLockedValue { $0 } == ["next", "blocked"] })
    }

    @Test func anIdleThreadRunsTheNextJobAndTheThreadIsNamed() {
        let worker = CredentialWorker(name: "tp-test-cred")
        let names = Mutex<[String?]>([])
        worker.run { names.withLockedValue { $0.append(Thread.current.name) } }
        #expect(eventually { worker.threadCount == (alive: 1, idle: 1) })
        worker.run { names.withLockedValue { $0.append(Thread.current.name) } }
        #expect(eventually { names.withLockedValue { $0.count } == 2 })
        #expect(eventually { worker.threadCount == (alive: 1, idle: 1) })
        #expect(names.withLockedValue { $0 } == ["tp-test-cred", "tp-test-cred"])
    }

    @Test func threadsBeyondTheIdleLimitEndWithTheirJobs() {
        let worker = CredentialWorker(name: "tp-test-cred", idleLimit: 1)
        let release = DispatchSemaphore(value: 0)
        let started = Mutex(0)
        for _ in 0..<3 {
            worker.run {
                started.withLockedValue { $0 += 1 }
                release.wait()
            }
        }
        #expect(eventually { started.withLockedValue { $0 } == 3 })
        #expect(worker.threadCount == (alive: 3, idle: 0))
        for _ in 0..<3 { release.signal() }
        #expect(eventually { worker.threadCount == (alive: 1, idle: 1) })
    }
}
