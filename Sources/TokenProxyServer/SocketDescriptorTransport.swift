import Dispatch
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A ``ConnectionTransport`` over a client socket: reading, writing, the half-close and the
/// clock are the same whether the socket's readiness comes from Dispatch sources of its own
/// (``SocketTransport``) or from an event loop's epoll set (``LoopTransport``).
protocol SocketDescriptorTransport: ConnectionTransport {
    /// The client socket, non-blocking.
    var descriptor: Int32 { get }
}

extension SocketDescriptorTransport {
    /// The monotonic clock Dispatch timers use.
    var now: DispatchTime { .now() }

    /// Reads once through the thread's read buffer (``Socket/readThroughThreadBuffer(_:_:)``).
    func read(into input: inout ByteQueue) throws(SystemError) -> Int {
        try Socket.readThroughThreadBuffer(self.descriptor) { outcome in
            guard case .processed(let bytes) = outcome else { return -1 }
            input.append(contentsOf: bytes)
            return bytes.count
        }
    }

    /// One non-blocking `send`; `MSG_NOSIGNAL` turns a gone peer into `EPIPE` rather than a
    /// signal.
    func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("write") {
            Glibc.send(self.descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        }
    }

    /// `shutdown(SHUT_WR)`.
    func shutdownOutput() {
        shutdown(self.descriptor, Int32(SHUT_WR))
    }
}
