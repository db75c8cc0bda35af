import Foundation

/// A held provider lock. Released by ``release()`` or when the value is deinitialized.
package protocol TokenStoreLock: Sendable {
    /// Releases the lock; further calls do nothing.
    func release()
}
