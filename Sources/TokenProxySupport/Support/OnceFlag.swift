import Synchronization

/// A flag that exactly one caller can claim, from any thread.
package final class OnceFlag: Sendable {
    private let claimed = Atomic<Bool>(false)

    /// A flag nobody has claimed yet.
    package init() {}

    /// Returns true for the first caller only.
    package func claim() -> Bool {
        !self.claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}
