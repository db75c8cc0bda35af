import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Carries a value that is confined to one ``SerialContext`` across a `@Sendable` boundary.
///
/// `@unchecked Sendable` is sound because the value is only reachable through ``value``,
/// which checks that the caller holds the context's gate; a value may therefore travel to
/// another thread, but is only touched under its own context.
package struct QueueBound<Value>: @unchecked Sendable {
    private let storage: Value
    /// The context that owns the value.
    package let context: SerialContext

    /// Wraps `value`, owned by `context`.
    package init(_ value: Value, context: SerialContext) {
        self.storage = value
        self.context = context
    }

    /// The value; the caller must hold the context (run on its queue through it).
    package var value: Value {
        precondition(self.context.isCurrent, "a queue-bound value was touched outside its context")
        return self.storage
    }

    /// Runs `body` with the value on the owning queue, from any thread.
    package func execute(_ body: @escaping @Sendable (Value) -> Void) {
        self.context.async {
            body(self.storage)
        }
    }

    /// Runs `body` at once when the caller already holds the context, otherwise like
    /// ``execute(_:)``. Only for callers that hold no state `body` could reenter.
    package func executeNowOrLater(_ body: @escaping @Sendable (Value) -> Void) {
        if self.context.isCurrent {
            body(self.storage)
        } else {
            self.execute(body)
        }
    }
}
