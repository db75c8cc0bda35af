import Synchronization

/// A one-way signal that work in flight should stop: handlers registered with
/// ``onCancel(_:)`` run once when ``cancel()`` is called (at once when it already was).
/// A provider replaced by a reload uses it to abandon its token request: the endpoint's
/// transfer is cancelled, pending retries stop, and the thread waiting for the answer is
/// released with its locks.
package final class CancellationSignal: Sendable {
    /// Whether the signal fired, and the handlers still waiting for it, by registration.
    private struct State {
        var cancelled = false
        var handlers: [UInt64: @Sendable () -> Void] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    /// A signal not fired yet.
    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { self.state.withLockedValue { $0.cancelled } }

    /// Runs `handler` once the signal fires: now when it has, else on the thread that fires
    /// it. Returns the registration to ``remove(_:)`` once the work ended (nil when it ran now).
    @discardableResult
    package func onCancel(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
        let registration = self.state.withLockedValue { state -> UInt64? in
            guard !state.cancelled else { return nil }
            state.next &+= 1
            state.handlers[state.next] = handler
            return state.next
        }
        if registration == nil {
            handler()
        }
        return registration
    }

    /// Forgets a handler whose work ended before the signal fired.
    package func remove(_ registration: UInt64?) {
        guard let registration else { return }
        _ = self.state.withLockedValue { $0.handlers.removeValue(forKey: registration) }
    }

    /// Fires the signal: every registered handler runs once, here; later calls do nothing.
    package func cancel() {
        let handlers = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.handlers = [:] }
            return state.handlers.sorted { $0.key < $1.key }.map(\.value)
        }
        handlers.forEach { $0() }
    }
}
