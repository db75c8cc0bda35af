import Synchronization
import TokenProxySupport

/// Sums the open connections of the servers registered after construction.
package final class ConnectionCounter: Sendable {
    private let registered = Mutex<[HTTPServer]>([])

    /// A counter with no server registered.
    package init() {}

    /// The servers counted; set once they exist.
    package var servers: [HTTPServer] {
        get { self.registered.withLockedValue { $0 } }
        set { self.registered.withLockedValue { $0 = newValue } }
    }

    /// Their open connections.
    package var count: Int {
        self.servers.reduce(0) { $0 + $1.openConnections }
    }
}
