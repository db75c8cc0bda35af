#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads, writes, waits on and closes an open file descriptor: the calls the log writer,
/// the token store and the child processes of `command` credentials share, each through
/// ``syscall(_:_:)`` or ``syscallBlocking(_:_:)`` so EINTR is retried in one place.
package enum Descriptor {
    /// The process's standard error.
    package static let standardError: Int32 = STDERR_FILENO

    /// One `read(2)` into `buffer`: the count read (0 at the end), or would-block on a
    /// non-blocking descriptor with nothing to read.
    package static func read(
        _ descriptor: Int32,
        into buffer: UnsafeMutableRawBufferPointer,
        name: @autoclosure () -> String = "read"
    ) throws(SystemError) -> IOResult<Int> {
        try syscall(name()) { systemRead(descriptor, buffer.baseAddress, buffer.count) }
    }

    /// One `write(2)` of `bytes`: the count written, or would-block on a non-blocking
    /// descriptor that takes nothing now.
    package static func write(
        _ descriptor: Int32,
        _ bytes: UnsafeRawBufferPointer,
        name: @autoclosure () -> String = "write"
    ) throws(SystemError) -> IOResult<Int> {
        try syscall(name()) { systemWrite(descriptor, bytes.baseAddress, bytes.count) }
    }

    /// Reads `descriptor` (a regular file) to its end; nil when it holds more than `limit` bytes.
    package static func readAll(
        _ descriptor: Int32,
        limit: Int,
        name: @autoclosure () -> String = "read"
    ) throws(SystemError) -> [UInt8]? {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            switch try self.read(descriptor, into: buffer, name: name()) {
            case .processed(let read): count = read
            // A regular file never makes a read wait: a non-blocking descriptor with nothing to
            // read is something else, and waiting for it could last for ever.
            case .wouldBlock: throw SystemError(call: name(), errno: EAGAIN)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > limit { return nil }
        }
    }

    /// Writes all of `bytes`, continuing after short writes and waiting while a non-blocking
    /// descriptor takes nothing. A write that takes no byte fails as `EIO`.
    package static func writeAll(
        _ descriptor: Int32,
        _ bytes: UnsafeRawBufferPointer,
        name: @autoclosure () -> String = "write"
    ) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch try self.write(descriptor, rest, name: name()) {
            case .processed(let written):
                guard written > 0 else { throw SystemError(call: name(), errno: EIO) }
                offset += written
            case .wouldBlock:
                // A descriptor someone made non-blocking: wait until it takes bytes.
                self.wait(for: descriptor, readable: false, milliseconds: -1)
            }
        }
    }

    /// Waits until `descriptor` is readable (or writable), at most `milliseconds` (-1: no
    /// limit); returns whether it is. An interrupted wait returns false.
    @discardableResult
    package static func wait(for descriptor: Int32, readable: Bool, milliseconds: Int32) -> Bool {
        !self.ready([descriptor], events: Int16(readable ? POLLIN : POLLOUT), milliseconds: milliseconds).isEmpty
    }

    /// Waits up to `milliseconds` until one of `descriptors` is readable, has ended or failed;
    /// returns those that are. An interrupted wait returns none.
    package static func waitReadable(_ descriptors: [Int32], milliseconds: Int32) -> [Int32] {
        self.ready(descriptors, events: Int16(POLLIN), milliseconds: milliseconds)
    }

    /// `poll(2)` of `descriptors` for `events`: those with any event to report.
    private static func ready(_ descriptors: [Int32], events: Int16, milliseconds: Int32) -> [Int32] {
        var entries = descriptors.map { pollfd(fd: $0, events: events, revents: 0) }
        guard poll(&entries, nfds_t(entries.count), milliseconds) > 0 else { return [] }
        return entries.filter { $0.revents != 0 }.map(\.fd)
    }

    /// Closes a descriptor that was only read or locked: nothing depends on the outcome. Not
    /// retried on EINTR: Linux releases the descriptor even then.
    package static func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    /// Closes a descriptor that was written, reporting a failure (NFS reports write errors
    /// here). EINTR counts as closed, as Linux releases the descriptor even then.
    package static func closeWritten(_ descriptor: Int32, name: @autoclosure () -> String = "close") throws(SystemError)
    {
        if systemClose(descriptor) == 0 || errno == EINTR { return }
        throw SystemError(call: name(), errno: errno)
    }

    /// `fsync(2)`: the bytes written to `descriptor` are on disk when it returns.
    package static func sync(_ descriptor: Int32, name: @autoclosure () -> String = "fsync") throws(SystemError) {
        try syscallBlocking(name(), fsync(descriptor))
    }
}

/// `read(2)`, `write(2)` and `close(2)` under names that do not clash with ``Descriptor``'s.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
