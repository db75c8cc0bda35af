import Synchronization

/// A flag that exactly one caller can claim, from any thread.
final class OnceFlag: Sendable {
    private let claimed = Atomic<Bool>(false)

    /// Returns true for the first caller only.
    func claim() -> Bool {
        !self.claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// Sums the open connections of the servers registered after construction.
final class ConnectionCounter: Sendable {
    private let registered = Mutex<[HTTPServer]>([])

    /// The servers counted; set once they exist.
    var servers: [HTTPServer] {
        get { self.registered.withLock { $0 } }
        set { self.registered.withLock { $0 = newValue } }
    }

    /// Their open connections.
    var count: Int {
        self.servers.reduce(0) { $0 + $1.openConnections }
    }
}
