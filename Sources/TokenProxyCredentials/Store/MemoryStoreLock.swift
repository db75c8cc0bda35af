import Foundation
import Synchronization
import TokenProxySupport

/// A provider lock of a ``MemoryTokenStore``: released once, by ``release()`` or when it
/// goes away.
final class MemoryStoreLock: TokenStoreLock {
    private let action = Mutex<(@Sendable () -> Void)?>(nil)

    init(release: @escaping @Sendable () -> Void) {
        self.action.withLockedValue { $0 = release }
    }

    func release() {
        self.action.withLockedValue { $0.take() }?()
    }

    deinit {
        self.release()
    }
}
