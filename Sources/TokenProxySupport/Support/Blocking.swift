import Dispatch
import Synchronization

/// Waiting on a dedicated thread for a completion-handler call to finish. Only for threads
/// of our own (credential fetches, CLI commands), never for a Dispatch queue serving
/// connections.
package enum Blocking {
    /// Starts `operation` and blocks until it calls its completion, returning the value.
    package static func wait<Value: Sendable>(_ operation: (@escaping @Sendable (Value) -> Void) -> Void) -> Value {
        guard let value = self.wait(until: nil, operation) else {
            // Safe because without a deadline the wait ends only once the value is stored.
            preconditionFailure("completion signalled without a value")
        }
        return value
    }

    /// Starts `operation` and blocks until it calls its completion or `deadline` passes,
    /// whichever comes first: the value, or nil at the deadline (a later completion is
    /// dropped).
    package static func wait<Value: Sendable>(
        until deadline: ContinuousClock.Instant?,
        _ operation: (@escaping @Sendable (Value) -> Void) -> Void
    ) -> Value? {
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<Value?>(nil)
        operation { value in
            result.withLockedValue { $0 = value }
            semaphore.signal()
        }
        if let deadline {
            _ = semaphore.wait(timeout: .after(deadline - .now))
        } else {
            semaphore.wait()
        }
        return result.withLockedValue { $0.take() }
    }
}
