import Foundation
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP server that speaks just enough of Redis to misbehave: it reads a command,
/// then answers as the test says (a valid answer dripped a byte at a time, a bulk string far
/// larger than any the store asks for). It counts what it sent and whether it got to the end.
final class FakeRedisPeer: Sendable {
    /// How the peer answers each command.
    enum Behaviour: Sendable {
        /// `reply`, one byte every `pause`.
        case drip(reply: [UInt8], pause: Duration)
        /// A bulk string header announcing `length` bytes, then filler until the client
        /// leaves or `length` bytes were sent.
        case huge(length: Int)
    }

    let port: UInt16
    private let listener: Int32
    private let behaviour: Behaviour
    private let counters = Mutex((sent: 0, finished: false, connections: 0, ended: 0))

    /// A peer listening on a free loopback port.
    init(_ behaviour: Behaviour) throws {
        let (listener, port) = try LoopbackSocket.listening(backlog: 16)
        self.listener = listener
        self.port = port
        self.behaviour = behaviour
        Thread.detachNewThread { [self] in self.acceptLoop() }
    }

    deinit {
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }

    /// Bytes sent on every connection together.
    var sent: Int { self.counters.withLockedValue { $0.sent } }
    /// Whether some answer was sent to its end.
    var finished: Bool { self.counters.withLockedValue { $0.finished } }
    /// Connections accepted.
    var connections: Int { self.counters.withLockedValue { $0.connections } }
    /// Connections whose answer ended (sent whole, or the client left).
    var ended: Int { self.counters.withLockedValue { $0.ended } }

    private func acceptLoop() {
        while true {
            let connection = accept(self.listener, nil, nil)
            guard connection >= 0 else { return }
            self.counters.withLockedValue { $0.connections += 1 }
            Thread.detachNewThread { [self] in
                defer {
                    close(connection)
                    self.counters.withLockedValue { $0.ended += 1 }
                }
                var request = [UInt8](repeating: 0, count: 64 * 1024)
                guard recv(connection, &request, request.count, 0) > 0 else { return }
                self.answer(on: connection)
            }
        }
    }

    private func answer(on connection: Int32) {
        switch self.behaviour {
        case .drip(let reply, let pause):
            let seconds = Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18
            for (index, byte) in reply.enumerated() {
                if index > 0 { Thread.sleep(forTimeInterval: seconds) }
                guard self.send([byte], on: connection) else { return }
            }
            self.counters.withLockedValue { $0.finished = true }
        case .huge(let length):
            guard self.send(Array("$\(length)\r\n".utf8), on: connection) else { return }
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
            var left = length
            while left > 0 {
                guard self.send(Array(chunk.prefix(left)), on: connection) else { return }
                left -= min(left, chunk.count)
            }
            self.counters.withLockedValue { $0.finished = true }
        }
    }

    /// Sends all of `bytes`; false once the client is gone.
    private func send(_ bytes: [UInt8], on connection: Int32) -> Bool {
        LoopbackSocket.sendAll(connection, bytes) { written in self.counters.withLockedValue { $0.sent += written } }
    }
}
