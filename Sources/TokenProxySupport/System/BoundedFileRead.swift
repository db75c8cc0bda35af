#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a small regular file whole without ever waiting on anything but the disk.
///
/// `open(2)` of a FIFO waits for a writer, and a read from a FIFO, a socket or a terminal
/// waits for data; a serving thread that does either can be held for ever by whoever
/// replaced the file. So the file is opened with `O_NONBLOCK` (which makes `open` of a FIFO
/// return at once), `O_NOCTTY` and `O_CLOEXEC`, and without following a final symbolic link;
/// the open descriptor is `fstat`ed, and anything but a regular file of at most `maxBytes`
/// is refused before a byte is read. At most `maxBytes + 1` bytes are read, so a file that
/// grows while it is read is refused too.
package enum BoundedFileRead {
    /// Why the file was not read.
    package enum Failure: Error, Sendable {
        /// A system call failed (`open`: No such file or directory).
        case system(SystemError)
        /// The path names something else than a regular file.
        case notRegular(FileStatus.Kind)
        /// The file holds more than the allowed number of bytes.
        case tooLarge(Int)
    }

    /// The bytes of the regular file at `path` and the status of the descriptor they were
    /// read from, which the caller checks (owner, mode, identity) before using the bytes. A
    /// final symbolic link is followed only when `followingLinks` (the configuration file,
    /// which a Kubernetes ConfigMap mounts as a link).
    package static func read(
        path: String,
        maxBytes: Int,
        followingLinks: Bool = false
    ) throws(Failure) -> (bytes: [UInt8], status: FileStatus) {
        let flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW)
        let descriptor: Int32
        do {
            descriptor = try syscallBlocking("open(\(path))", open(path, flags))
        } catch {
            throw .system(error)
        }
        defer { _ = close(descriptor) }
        let status: FileStatus
        do {
            status = try FileStatus.of(descriptor: descriptor)
        } catch {
            throw .system(error)
        }
        guard status.kind == .regular else { throw .notRegular(status.kind) }
        guard status.size <= Int64(maxBytes) else { throw .tooLarge(maxBytes) }
        let limit = maxBytes + 1
        var bytes = [UInt8](repeating: 0, count: min(limit, Int(status.size) + 1))
        var count = 0
        while count < limit {
            if count == bytes.count { bytes.append(contentsOf: repeatElement(0, count: min(limit, count * 2) - count)) }
            let outcome = bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) -> IOResult<Int> in
                    try syscall("read(\(path))") {
                        systemRead(descriptor, buffer.baseAddress.map { $0 + count }, buffer.count - count)
                    }
                }
            }
            let read: Int
            switch outcome {
            case .failure(let error): throw .system(error)
            case .success(.processed(let bytes)): read = bytes
            // A regular file never makes a read wait; a would-block answer means it is not one.
            case .success(.wouldBlock): throw .notRegular(.unknown)
            }
            if read == 0 { break }
            count += read
        }
        guard count <= maxBytes else { throw .tooLarge(maxBytes) }
        return (Array(bytes.prefix(count)), status)
    }
}

/// `read(2)` under a name that does not clash with ``BoundedFileRead/read(path:maxBytes:)``.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
