import Synchronization

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
