import Synchronization
import TokenProxySupport

/// The one early refresh a provider has planned: a new token replaces the plan instead of
/// adding a timer, so a provider that gets many tokens (an upstream that refuses each with a
/// 401) keeps one pending deadline, not one per token for each token's whole life.
final class RefreshTimer: Sendable {
    private struct State {
        /// The token to renew, and when.
        var token: AccessToken?
        var due: ContinuousClock.Instant?
        /// The earliest deadline handed to the scheduler and not fired yet.
        var armed: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let scheduler: DeadlineScheduler
    private let run: @Sendable (AccessToken) -> Void

    /// A timer that calls `run` with the planned token when its time comes.
    init(scheduler: DeadlineScheduler = .shared, run: @escaping @Sendable (AccessToken) -> Void) {
        self.scheduler = scheduler
        self.run = run
    }

    /// Plans the renewal of `token` at `due`, replacing any earlier plan.
    func plan(_ token: AccessToken, at due: ContinuousClock.Instant) {
        let arm = self.state.withLockedValue { state -> Bool in
            state.token = token
            state.due = due
            guard state.armed.map({ due < $0 }) ?? true else { return false }
            state.armed = due
            return true
        }
        if arm {
            self.arm(due)
        }
    }

    private func arm(_ deadline: ContinuousClock.Instant) {
        self.scheduler.schedule(at: deadline) { [weak self] in self?.fired(deadline) }
    }

    private func fired(_ deadline: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        enum Next {
            case nothing
            case rearm(ContinuousClock.Instant)
            case run(AccessToken)
        }
        let next = self.state.withLockedValue { state -> Next in
            if state.armed == deadline {
                state.armed = nil
            }
            guard let token = state.token, let due = state.due else { return .nothing }
            guard due <= now else {
                // A later plan replaced the one this deadline was for.
                guard state.armed.map({ due < $0 }) ?? true else { return .nothing }
                state.armed = due
                return .rearm(due)
            }
            state.token = nil
            state.due = nil
            return .run(token)
        }
        switch next {
        case .nothing: break
        case .rearm(let due): self.arm(due)
        case .run(let token): self.run(token)
        }
    }
}
