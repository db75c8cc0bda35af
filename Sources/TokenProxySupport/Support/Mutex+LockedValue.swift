import CSystemShims
import Synchronization

extension Mutex where Value: ~Copyable {
    /// Runs `body` holding the lock, as `withLock` does, and tells the thread sanitizer of the
    /// order the lock makes (a build without it makes two empty calls). On Linux a contended
    /// `Mutex` passes from one thread to the next in the kernel, inside the Swift runtime, where
    /// the sanitizer cannot see it: without this, every access the lock guards could be
    /// reported as a race once two threads wanted the lock at once.
    ///
    /// The lock's own address is not available here; the guarded value's is, stable while the
    /// lock is held, and unique to the lock.
    ///
    /// Inlinable, so that each caller's module specializes it for its value: called across the
    /// module boundary as a generic function, each lock taken on a request's path cost about
    /// 300 instructions of metadata look-ups and indirect calls.
    @inlinable
    package borrowing func withLockedValue<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try self.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafeMutablePointer(to: &value) { UnsafeMutableRawPointer($0) }
            tp_tsan_acquire(address)
            defer { tp_tsan_release(address) }
            return try body(&value)
        }
    }
}
