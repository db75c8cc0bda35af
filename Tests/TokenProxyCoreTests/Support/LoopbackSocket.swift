import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// TCP sockets on an ephemeral port of 127.0.0.1, for the tests' own servers.
enum LoopbackSocket {
    /// A socket bound to a free port and listening, with that port; the caller closes it.
    static func listening(backlog: Int32 = 64) throws -> (descriptor: Int32, port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure(message: "socket failed, errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard bound, listen(descriptor, backlog) == 0 else {
            let failure = errno
            close(descriptor)
            throw TestFailure(message: "bind or listen on 127.0.0.1 failed, errno \(failure)")
        }
        return (descriptor, UInt16(bigEndian: address.sin_port))
    }

    /// Sends every byte of `bytes` on `descriptor` (no SIGPIPE when the peer has gone),
    /// telling `progress` each count written; false once the connection broke.
    @discardableResult
    static func sendAll(_ descriptor: Int32, _ bytes: [UInt8], progress: (Int) -> Void = { _ in }) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return false }
            sent += count
            progress(count)
        }
        return true
    }

    /// A port that was free a moment ago (bound, then released).
    /// The kernel may hand the same ephemeral port out again once it is released, so a
    /// fixture taking several ports (or two fixtures running at once) could get one twice and
    /// its servers would then share it; no port is returned twice in one test process.
    static func freePort() throws -> UInt16 {
        for _ in 0..<64 {
            let (descriptor, port) = try Self.listening(backlog: 1)
            close(descriptor)
            if Self.handedOut.withLock({ $0.insert(port).inserted }) {
                return port
            }
        }
        throw TestFailure(message: "no fresh free port on 127.0.0.1")
    }

    /// Every port ``freePort()`` has returned.
    private static let handedOut = Mutex(Set<UInt16>())
}
