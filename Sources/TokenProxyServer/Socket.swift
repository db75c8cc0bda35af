import CSystemShims
import TokenProxyConfiguration
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Thin wrappers over the socket system calls the inbound server needs. Every descriptor is
/// created non-blocking and close-on-exec.
enum Socket {
    /// A bound, listening socket.
    struct Bound {
        /// The descriptor.
        var descriptor: Int32
        /// The address actually bound (the real port when 0 was asked for).
        var address: ListenAddress
    }

    /// Reads once from `descriptor` into the calling thread's own 64 KiB buffer and hands
    /// `body` what was read: no allocation and no zero-filling per read. `body` must be done
    /// with the bytes when it returns (the next read on this thread reuses the buffer).
    static func readThroughThreadBuffer<Result>(
        _ descriptor: Int32,
        _ body: (IOResult<UnsafeBufferPointer<UInt8>>) -> Result
    ) throws(SystemError) -> Result {
        let buffer = tp_thread_read_buffer()
        let outcome = try syscall("read") { Glibc.read(descriptor, buffer, Int(TP_THREAD_READ_BUFFER_SIZE)) }
        switch outcome {
        case .processed(let count):
            return body(.processed(UnsafeBufferPointer(start: buffer, count: count)))
        case .wouldBlock:
            return body(.wouldBlock)
        }
    }

    /// Creates a listening socket on `address`. A unix socket is created with mode 0600 and
    /// a stale socket file at its path is replaced; any other file there is an error.
    static func listen(on address: ListenAddress, backlog: Int32 = 511) throws(SystemError) -> Bound {
        switch address {
        case .inet(let host, let port):
            return try listenInet(host: host, port: port, backlog: backlog)
        case .unix(let path):
            return try listenUnix(path: path, backlog: backlog)
        }
    }

    private static func listenInet(host: String, port: UInt16, backlog: Int32) throws(SystemError) -> Bound {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw SystemError(call: "getaddrinfo(\(host))", errno: status == EAI_SYSTEM ? errno : EADDRNOTAVAIL)
        }
        defer { freeaddrinfo(list) }
        let info = first.pointee
        let descriptor = try syscallBlocking(
            "socket",
            Glibc.socket(
                info.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                0
            )
        )
        do throws(SystemError) {
            var one: Int32 = 1
            try syscallBlocking(
                "setsockopt(SO_REUSEADDR)",
                setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            )
            if info.ai_family == AF_INET6 {
                try syscallBlocking(
                    "setsockopt(IPV6_V6ONLY)",
                    setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
                )
            }
            try syscallBlocking("bind(\(host):\(port))", Glibc.bind(descriptor, info.ai_addr, info.ai_addrlen))
            try syscallBlocking("listen", Glibc.listen(descriptor, backlog))
            let boundPort = try localPort(descriptor)
            return Bound(descriptor: descriptor, address: .inet(host: host, port: boundPort))
        } catch {
            Glibc.close(descriptor)
            throw error
        }
    }

    private static func listenUnix(path: String, backlog: Int32) throws(SystemError) -> Bound {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { throw SystemError(call: "bind(\(path))", errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            // Replace only a stale socket, never a regular file someone pointed us at.
            guard status.st_mode & S_IFMT == S_IFSOCK else { throw SystemError(call: "bind(\(path))", errno: EEXIST) }
            unlink(path)
        }
        let descriptor = try syscallBlocking(
            "socket",
            Glibc.socket(
                AF_UNIX,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                0
            )
        )
        do throws(SystemError) {
            // The umask makes bind create the socket file 0600 from the start; chmod makes
            // sure of it whatever the process umask was.
            let previous = umask(0o177)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            umask(previous)
            try syscallBlocking("bind(\(path))", bound)
            try syscallBlocking("chmod(\(path))", chmod(path, 0o600))
            try syscallBlocking("listen", Glibc.listen(descriptor, backlog))
            return Bound(descriptor: descriptor, address: .unix(path: path))
        } catch {
            Glibc.close(descriptor)
            throw error
        }
    }

    private static func localPort(_ descriptor: Int32) throws(SystemError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try syscallBlocking("getsockname", getsockname(descriptor, address, &length))
            }
        }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        default:
            return 0
        }
    }

    /// Accepts one pending connection, non-blocking and close-on-exec, with its peer as text.
    static func accept(_ listener: Int32) throws(SystemError) -> IOResult<(Int32, String)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try syscall("accept4") {
                    tp_accept4(listener, address, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
        }
        guard case .processed(let descriptor) = result else { return .wouldBlock }
        let peer = describe(&storage)
        if storage.ss_family == sa_family_t(AF_INET) || storage.ss_family == sa_family_t(AF_INET6) {
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return .processed((descriptor, peer))
    }

    /// The numeric address of a peer (`127.0.0.1`, `::1`), or `unix` for a unix socket.
    private static func describe(_ storage: inout sockaddr_storage) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        switch Int32(storage.ss_family) {
        case AF_INET, AF_INET6:
            let length =
                Int32(storage.ss_family) == AF_INET
                ? socklen_t(MemoryLayout<sockaddr_in>.size) : socklen_t(MemoryLayout<sockaddr_in6>.size)
            let status = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    getnameinfo($0, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
                }
            }
            guard status == 0 else { return "unknown" }
            return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        default:
            return "unix"
        }
    }
}
