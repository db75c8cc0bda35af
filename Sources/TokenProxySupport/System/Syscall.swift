#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outcome of a non-blocking system call.
package enum IOResult<Value> {
    /// The call completed with this value.
    case processed(Value)
    /// The call would have blocked (EAGAIN / EWOULDBLOCK); wait for readiness.
    case wouldBlock
}

/// Runs a system call returning -1 on failure, retrying on EINTR and mapping EAGAIN to
/// ``IOResult/wouldBlock``; any other failure throws ``SystemError``.
@inline(__always)
package func syscall<T: FixedWidthInteger>(
    _ name: @autoclosure () -> String,
    _ body: () -> T
) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        guard result == -1 else { return .processed(result) }
        let error = errno
        switch error {
        case EINTR:
            continue
        case EAGAIN, EWOULDBLOCK:
            return .wouldBlock
        default:
            throw SystemError(call: name(), errno: error)
        }
    }
}

/// Runs a system call that must not block, retrying on EINTR; -1 throws ``SystemError``.
@inline(__always)
@discardableResult
package func syscallBlocking<T: FixedWidthInteger>(
    _ name: @autoclosure () -> String,
    _ body: @autoclosure () -> T
) throws(SystemError) -> T {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let error = errno
        if error == EINTR { continue }
        throw SystemError(call: name(), errno: error)
    }
}
