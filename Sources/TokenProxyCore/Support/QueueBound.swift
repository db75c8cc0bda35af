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

    /// Runs `body` at once when the caller already runs on the owning queue (and the queue
    /// was marked with ``DispatchQueue/markIdentity()``), otherwise like ``execute(_:)``.
    /// Only for callers that hold no state `body` could reenter.
    public func executeNowOrLater(_ body: @escaping @Sendable (Value) -> Void) {
        if self.queue.isCurrent {
            body(self.storage)
        } else {
            self.execute(body)
        }
    }
}

/// Which marked queue the caller runs on, for code that can skip a hop when it already
/// runs where it needs to.
enum QueueIdentity {
    static let key = DispatchSpecificKey<ObjectIdentifier>()
}

extension DispatchQueue {
    /// Lets ``isCurrent`` recognize this queue (and queues targeting it).
    func markIdentity() {
        self.setSpecific(key: QueueIdentity.key, value: ObjectIdentifier(self))
    }

    /// Whether the caller runs on this queue; false for queues never marked.
    var isCurrent: Bool {
        DispatchQueue.getSpecific(key: QueueIdentity.key) == ObjectIdentifier(self)
    }
}
