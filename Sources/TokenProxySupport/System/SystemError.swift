#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed system call: the call's name and `errno`.
package struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The system call that failed.
    package var call: String
    /// The `errno` it set.
    package var errno: Int32

    /// `strerror(errno)`: what went wrong, without the call.
    package var reason: String {
        String(cString: strerror(self.errno))
    }

    /// `call: strerror(errno)`.
    package var description: String {
        "\(self.call): \(self.reason)"
    }

    /// The failure of `call`, which set `errno`.
    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
}
