import Dispatch

/// Carries a value that is confined to one serial queue across a `@Sendable` boundary.
///
/// `@unchecked Sendable` is sound because the value is only reachable through ``value``,
/// which checks (in debug builds) that the caller runs on the owning queue; a value may
/// therefore travel to another thread, but is only touched back on its own queue.
public struct QueueBound<Value>: @unchecked Sendable {
    private let storage: Value
    /// The serial queue that owns the value.
    public let queue: DispatchQueue

    /// Wraps `value`, owned by `queue`.
    public init(_ value: Value, queue: DispatchQueue) {
        self.storage = value
        self.queue = queue
    }

    /// The value; must be called on ``queue``.
    public var value: Value {
        dispatchPrecondition(condition: .onQueue(self.queue))
        return self.storage
    }

    /// Runs `body` with the value on the owning queue, from any thread.
    public func execute(_ body: @escaping @Sendable (Value) -> Void) {
        self.queue.async {
            body(self.value)
        }
    }
}
