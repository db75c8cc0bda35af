import Foundation
import Synchronization
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// The deadline thread and the ends it puts to token waits (`docs/reference/security.md`, "Hostile
/// timing").
struct DeadlineTests {
    @Test func actionsRunInTheOrderOfTheirDeadlinesHoweverTheyWereScheduled() {
        let scheduler = DeadlineScheduler(name: "tp-test-deadl")
        let ran = Mutex<[Int]>([])
        let start = ContinuousClock.now + .milliseconds(100)
        // Scheduled latest first, earliest last, and some in between, all while the
        // scheduler's thread is held: the order is the deadlines', however long scheduling
        // took and whichever deadlines passed meanwhile.
        #expect(
            whileHeld(scheduler) {
                for index in [9, 0, 5, 3, 8, 1, 7, 2, 6, 4] {
                    scheduler.schedule(at: start + .milliseconds(Int64(index * 20))) {
                        ran.withLockedValue { $0.append(index) }
                    }
                }
            }
        )
        #expect(eventually { ran.withLockedValue { $0.count } == 10 })
        #expect(ran.withLockedValue { $0 } == Array(0..<10))
    }

    @Test func aPastDeadlineRunsAtOnceEvenBehindALateOne() {
        let scheduler = DeadlineScheduler(name: "tp-test-deadl")
        let ran = Mutex<[String]>([])
        scheduler.schedule(at: .now + .seconds(3600)) { ran.withLockedValue { $0.append("late") } }
        scheduler.schedule(at: .now - .seconds(1)) { ran.withLockedValue { $0.append("past") } }
        #expect(eventually { ran.withLockedValue { $0 } == ["past"] })
    }

    @Test func aProviderKeepsOneRefreshPlanWhateverTheTokensItGets() {
        let scheduler = DeadlineScheduler(name: "tp-test-refresh")
        let ran = Mutex<[String]>([])
        let timer = RefreshTimer(scheduler: scheduler) { token in ran.withLockedValue { $0.append(token.value) } }
        let now = ContinuousClock.now
        // A hundred tokens, each planned later than the one before: only the last is renewed
        // (planned while the scheduler's thread is held, so that no plan falls due before
        // the next replaces it, however slowly the loop runs).
        #expect(
            whileHeld(scheduler) {
                for index in 1...100 {
                    timer.plan(AccessToken(value: "t\(index)"), at: now + .milliseconds(Int64(100 + index)))
                }
            }
        )
        #expect(eventually { ran.withLockedValue { $0 } == ["t100"] })
        // A plan earlier than the pending one is kept to as well.
        timer.plan(AccessToken(value: "late"), at: .now + .seconds(3600))
        timer.plan(AccessToken(value: "soon"), at: .now + .milliseconds(50))
        #expect(eventually { ran.withLockedValue { $0 } == ["t100", "soon"] })
    }

    @Test func aFetchThatNeverEndsIsGivenUpItsWaitersAnsweredAndItsLateResultIgnored() {
        let cache = SharedTokenCache(
            provider: "svc",
            refreshSkewSeconds: 0,
            waitSeconds: 60,
            fetchSeconds: 0.2,
            backoffSeconds: 0.5
        )
        let answers = Mutex<[Result<AccessToken, ProxyError>]>([])
        let started = Mutex<[SharedTokenCache.Fetch]>([])
        for _ in 0..<3 {
            cache.token(completion: { result in answers.withLockedValue { $0.append(result) } }) { fetch in
                // A fetch that never reports.
                started.withLockedValue { $0.append(fetch) }
            }
        }
        #expect(started.withLockedValue { $0.count } == 1)
        // The watchdog answers every waiter long before their own wait ends.
        #expect(eventually { answers.withLockedValue { $0.count } == 3 })
        for answer in answers.withLockedValue({ $0 }) {
            guard case .failure(let error) = answer else {
                Issue.record("a waiter got a token")
                continue
            }
            #expect(error.code == .tokenUnavailable)
            #expect(error.message.contains("token_request_seconds"))
        }
        // The abandoned fetch reports at last: nothing changes.
        if let abandoned = started.withLockedValue({ $0.first }) {
            cache.complete(abandoned, .success(AccessToken(value: "late")))
        }
        #expect(cache.tokenAtHand() == nil)
        // After the backoff a new fetch starts, and its result is taken.
        let next = Mutex<SharedTokenCache.Fetch?>(nil)
        #expect(
            eventually {
                cache.token(completion: { _ in }) { fetch in next.withLockedValue { $0 = fetch } }
                return next.withLockedValue { $0 } != nil
            }
        )
        if let fetch = next.withLockedValue({ $0 }) {
            cache.complete(fetch, .success(AccessToken(value: "fresh")))
        }
        #expect(cache.tokenAtHand()?.value == "fresh")
    }

    @Test func aWaiterGetsItsAnswerAtItsOwnWaitLimitWhileTheFetchGoesOn() {
        let cache = SharedTokenCache(provider: "svc", refreshSkewSeconds: 0, waitSeconds: 0.2, fetchSeconds: 60)
        let answer = Mutex<Result<AccessToken, ProxyError>?>(nil)
        let running = Mutex<SharedTokenCache.Fetch?>(nil)
        cache.token(completion: { result in answer.withLockedValue { $0 = result } }) { fetch in
            running.withLockedValue { $0 = fetch }
        }
        let result = eventually { answer.withLockedValue { $0 } }
        guard case .failure(let error)? = result else {
            Issue.record("no timely failure: \(String(describing: result))")
            return
        }
        #expect(error.message.contains("token_wait_seconds"))
        // The fetch still counts: its result serves the next caller at once.
        if let fetch = running.withLockedValue({ $0 }) {
            cache.complete(fetch, .success(AccessToken(value: "t")))
        }
        #expect(cache.tokenAtHand()?.value == "t")
    }

    /// A retired cache (a reload replaced its provider) hands its waiters, with the end of
    /// wait each already had, and every later caller to its successor; the abandoned fetch's
    /// late result answers nobody twice and caches nothing.
    @Test func aRetiredCacheHandsItsWaitersOnWithTheirDeadlines() {
        let cache = SharedTokenCache(provider: "svc", refreshSkewSeconds: 0, waitSeconds: 30, fetchSeconds: 60)
        let answers = Mutex<[String]>([])
        let record: @Sendable (Result<AccessToken, ProxyError>) -> Void = { result in
            answers.withLockedValue { $0.append((try? result.get().value) ?? "failure") }
        }
        let running = Mutex<SharedTokenCache.Fetch?>(nil)
        let until = ContinuousClock.now + .seconds(7)
        cache.token(completion: record, until: until) { fetch in running.withLockedValue { $0 = fetch } }
        cache.token(completion: record, until: until + .seconds(1)) { _ in Issue.record("a second fetch") }

        let handed = Mutex<[ContinuousClock.Instant]>([])
        cache.retire { completion, deadline in
            handed.withLockedValue { $0.append(deadline) }
            completion(.success(AccessToken(value: "successor")))
        }
        #expect(handed.withLockedValue { $0 } == [until, until + .seconds(1)])
        #expect(answers.withLockedValue { $0 } == ["successor", "successor"])

        if let fetch = running.withLockedValue({ $0 }) {
            cache.complete(fetch, .success(AccessToken(value: "late")))
        }
        #expect(answers.withLockedValue { $0 } == ["successor", "successor"])
        #expect(cache.tokenAtHand() == nil)
        cache.token(completion: record) { _ in Issue.record("a fetch after retirement") }
        #expect(answers.withLockedValue { $0 } == ["successor", "successor", "successor"])
        #expect(handed.withLockedValue { $0.count } == 3)
    }
}

/// Runs `body` while `scheduler`'s thread is held inside an action, so that everything
/// `body` schedules is pending at once when the thread goes on. False when the thread never
/// took the holding action.
private func whileHeld(_ scheduler: DeadlineScheduler, _ body: () -> Void) -> Bool {
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    scheduler.schedule(at: .now) {
        entered.signal()
        _ = release.wait(timeout: .now() + 60)
    }
    defer { release.signal() }
    guard entered.wait(timeout: .now() + 60) == .success else { return false }
    body()
    return true
}
