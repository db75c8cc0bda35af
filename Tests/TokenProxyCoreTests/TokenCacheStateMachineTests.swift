import Foundation
import Testing

@testable import TokenProxyCredentials

/// Walks of the token cache's state machine: each step is an event at an offset from a fixed
/// start, and what the machine must answer.
struct TokenCacheStateMachineTests {
    private typealias Machine = TokenCacheStateMachine<Int, String>

    /// One event of a walk.
    private enum Step {
        /// Waiter `id` asks at `at` seconds; `expect` is the action's kind.
        case request(Int, at: Double, expect: Expected)
        /// The running fetch ends with a token living `lifetime` seconds from `at` (nil: no
        /// expiry); `released` are the waiters it answers.
        case succeed(at: Double, lifetime: Double?, released: [Int])
        /// The running fetch fails at `at`, asking for `retryAfter` seconds.
        case fail(at: Double, retryAfter: Double? = nil, released: [Int])
        /// Waiter `id`'s wait ended; whether it was still waiting.
        case giveUp(Int, wasWaiting: Bool)
        /// The store changed.
        case reset
        /// A reload replaced the provider; `released` are the waiters handed on.
        case abandon(released: [Int])
    }

    private enum Expected: Equatable {
        case deliver(String)
        case startFetch
        case wait
        case fail(String)
    }

    private struct Walk: CustomTestStringConvertible {
        var name: String
        var skew: Double = 0
        var steps: [Step]
        var testDescription: String { self.name }
    }

    private static let walks: [Walk] = [
        Walk(
            name: "one fetch serves every waiter, then the cache answers",
            skew: 60,
            steps: [
                .request(1, at: 0, expect: .startFetch), .request(2, at: 0, expect: .wait),
                .request(3, at: 0, expect: .wait), .succeed(at: 1, lifetime: 3600, released: [1, 2, 3]),
                .request(4, at: 2, expect: .deliver("t1")),
            ]
        ),
        Walk(
            name: "a token is renewed the skew before it expires",
            skew: 60,
            steps: [
                .request(1, at: 0, expect: .startFetch), .succeed(at: 0, lifetime: 150, released: [1]),
                .request(2, at: 89, expect: .deliver("t1")), .request(3, at: 91, expect: .startFetch),
            ]
        ),
        Walk(
            name: "a lifetime shorter than the skew is used for half of it",
            skew: 60,
            steps: [
                .request(1, at: 0, expect: .startFetch), .succeed(at: 0, lifetime: 10, released: [1]),
                .request(2, at: 4, expect: .deliver("t1")), .request(3, at: 5.5, expect: .startFetch),
            ]
        ),
        Walk(
            name: "a failure answers the waiters and is remembered for the backoff",
            steps: [
                .request(1, at: 0, expect: .startFetch), .request(2, at: 0, expect: .wait),
                .fail(at: 1, released: [1, 2]), .request(3, at: 1.5, expect: .fail("e1")),
                .request(4, at: 2.1, expect: .startFetch),
            ]
        ),
        Walk(
            name: "failures in a row double the backoff",
            steps: [
                .request(1, at: 0, expect: .startFetch), .fail(at: 0, released: [1]),
                .request(2, at: 1, expect: .startFetch), .fail(at: 1, released: [2]),
                .request(3, at: 2.5, expect: .fail("e2")), .request(4, at: 3.1, expect: .startFetch),
                .fail(at: 3.1, released: [4]), .request(5, at: 6.9, expect: .fail("e3")),
                .request(6, at: 7.2, expect: .startFetch), .succeed(at: 7.2, lifetime: nil, released: [6]),
                .request(7, at: 8, expect: .deliver("t1")),
            ]
        ),
        Walk(
            name: "Retry-After lengthens the backoff within its maximum",
            steps: [
                .request(1, at: 0, expect: .startFetch), .fail(at: 0, retryAfter: 20, released: [1]),
                .request(2, at: 19, expect: .fail("e1")), .request(3, at: 20.5, expect: .startFetch),
                .fail(at: 20.5, retryAfter: 3600, released: [3]),
                .request(4, at: 50, expect: .fail("e2")), .request(5, at: 51, expect: .startFetch),
            ]
        ),
        Walk(
            name: "a waiter that gave up is not answered by the fetch",
            steps: [
                .request(1, at: 0, expect: .startFetch), .request(2, at: 0, expect: .wait),
                .giveUp(1, wasWaiting: true), .giveUp(1, wasWaiting: false),
                .succeed(at: 1, lifetime: nil, released: [2]), .giveUp(2, wasWaiting: false),
            ]
        ),
        Walk(
            name: "a change of the store forgets the token and the failure",
            steps: [
                .request(1, at: 0, expect: .startFetch), .succeed(at: 0, lifetime: nil, released: [1]),
                .reset, .request(2, at: 1, expect: .startFetch), .fail(at: 1, released: [2]),
                .request(3, at: 1.2, expect: .fail("e1")), .reset, .request(4, at: 1.3, expect: .startFetch),
            ]
        ),
        Walk(
            name: "a reload abandons the fetch: its waiters are handed on and its late result changes nothing",
            steps: [
                .request(1, at: 0, expect: .startFetch), .request(2, at: 0, expect: .wait),
                .abandon(released: [1, 2]), .succeed(at: 1, lifetime: nil, released: []),
                .giveUp(2, wasWaiting: false), .request(3, at: 1, expect: .startFetch),
            ]
        ),
        Walk(
            name: "a reload forgets the token and the failure, and hands on the waiters of a fetch",
            skew: 60,
            steps: [
                .request(1, at: 0, expect: .startFetch), .succeed(at: 0, lifetime: 150, released: [1]),
                .abandon(released: []), .request(2, at: 1, expect: .startFetch), .fail(at: 1, released: [2]),
                .abandon(released: []), .request(3, at: 1.1, expect: .startFetch),
                .succeed(at: 1.1, lifetime: 100, released: [3]), .request(4, at: 60, expect: .startFetch),
                .request(5, at: 60, expect: .wait), .abandon(released: [4, 5]),
            ]
        ),
    ]

    @Test(arguments: Self.walks)
    private func walk(_ walk: Walk) {
        var machine = Machine(skew: .milliseconds(Int64(walk.skew * 1000)))
        let start = ContinuousClock.now
        func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }
        var running: UInt64?
        var tokens = 0
        var failures = 0
        for (index, step) in walk.steps.enumerated() {
            switch step {
            case .request(let id, let time, let expected):
                let found: Expected
                switch machine.request(id, id: UInt64(id), now: at(time)) {
                case .deliver(let token): found = .deliver(token.value)
                case .startFetch(let fetch):
                    running = fetch
                    found = .startFetch
                case .wait: found = .wait
                case .fail(let failure): found = .fail(failure)
                }
                #expect(found == expected, "step \(index)")
            case .succeed(let time, let lifetime, let released):
                tokens += 1
                let token = AccessToken(
                    value: "t\(tokens)",
                    expiresAt: lifetime.map { at(time + $0) },
                    obtainedAt: at(time)
                )
                #expect(machine.fetchSucceeded(token, fetch: running ?? 0) == released, "step \(index)")
            case .fail(let time, let retryAfter, let released):
                failures += 1
                let answered = machine.fetchFailed(
                    "e\(failures)",
                    fetch: running ?? 0,
                    now: at(time),
                    retryAfter: retryAfter.map { .milliseconds(Int64($0 * 1000)) }
                )
                #expect(answered == released, "step \(index)")
            case .giveUp(let id, let wasWaiting):
                #expect((machine.removeWaiter(UInt64(id)) != nil) == wasWaiting, "step \(index)")
            case .reset:
                machine.reset()
            case .abandon(let released):
                #expect(machine.abandon() == released, "step \(index)")
            }
        }
    }

    @Test func theResultOfAnAbandonedFetchChangesNothing() {
        var machine = Machine(skew: .zero)
        let now = ContinuousClock.now
        guard case .startFetch(let first) = machine.request(1, id: UInt64(1), now: now) else {
            Issue.record("no fetch started")
            return
        }
        // The owner gave the first fetch up; the next one starts after the backoff.
        _ = machine.fetchFailed("abandoned", fetch: first, now: now)
        guard case .startFetch(let second) = machine.request(2, id: UInt64(2), now: now + .seconds(2)) else {
            Issue.record("no second fetch")
            return
        }
        #expect(machine.fetchSucceeded(AccessToken(value: "late"), fetch: first).isEmpty)
        #expect(machine.current(now: now + .seconds(2)) == nil)
        #expect(machine.fetchSucceeded(AccessToken(value: "new"), fetch: second) == [2])
        #expect(machine.current(now: now + .seconds(2))?.value == "new")
    }

    @Test func invalidateOnlyDropsTheTokenItNames() {
        var machine = Machine(skew: .zero)
        let now = ContinuousClock.now
        guard case .startFetch(let fetch) = machine.request(1, id: UInt64(1), now: now) else {
            Issue.record("no fetch started")
            return
        }
        let current = AccessToken(value: "new")
        _ = machine.fetchSucceeded(current, fetch: fetch)
        machine.invalidate(AccessToken(value: "old"))
        #expect(machine.current(now: now) == current)
        machine.invalidate(current)
        #expect(machine.current(now: now) == nil)
    }
}
