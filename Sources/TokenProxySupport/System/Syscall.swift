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
        guard try interrupted(name) else { return .wouldBlock }
    }
}

/// ``syscall(_:_:)-(_,()->T)`` for the calls that return a byte count (`read`, `write`): a
/// call from another layer has no generic parameter to look up at each call, whatever the
/// build specializes across layers (the debug builds specialize nothing there).
package func syscall(
    _ name: @autoclosure () -> String,
    _ body: () -> Int
) throws(SystemError) -> IOResult<Int> {
    while true {
        let result = body()
        guard result == -1 else { return .processed(result) }
        guard try interrupted(name) else { return .wouldBlock }
    }
}

/// After a call returned -1: whether it was interrupted (EINTR) and is to be made again;
/// false when it would have blocked (EAGAIN / EWOULDBLOCK). Any other failure throws.
private func interrupted(_ name: () -> String) throws(SystemError) -> Bool {
    let error = errno
    switch error {
    case EINTR:
        return true
    case EAGAIN, EWOULDBLOCK:
        return false
    default:
        throw SystemError(call: name(), errno: error)
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
