import Foundation
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system calls behind ``FileTokenStore``, each failure mapped to a ``TokenStoreError``
/// with code `io` whose message names the call, the path and `strerror(errno)`.
enum StoreFileSystem {
    /// The largest store file read; anything bigger is not a file this program wrote.
    static let maxFileBytes = 16 << 20

    /// The directory part of `path`: `"."` for a bare name, `"/"` for a file in the root.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last component of `path`.
    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// `path` joined to `name` in `directory`.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// Runs a system call through ``syscallBlocking(_:_:)`` (which retries EINTR) and maps its
    /// failure to an `io` error.
    @discardableResult
    static func call<T: FixedWidthInteger>(
        _ name: @autoclosure () -> String,
        _ body: @autoclosure () -> T
    ) throws(TokenStoreError) -> T {
        do {
            return try syscallBlocking(name(), body())
        } catch {
            throw TokenStoreError(io: error)
        }
    }

    /// Creates `directory` and each missing parent with mode 0700; existing directories are
    /// left as they are.
    static func createDirectories(_ directory: String) throws(TokenStoreError) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        guard errno == ENOENT else { throw TokenStoreError(io: SystemError(call: "stat(\(directory))", errno: errno)) }
        let parent = self.directory(of: directory)
        if parent != directory { try self.createDirectories(parent) }
        do {
            try syscallBlocking("mkdir(\(directory))", mkdir(directory, 0o700))
        } catch {
            if error.errno == EEXIST { return }  // Another process made it in the meantime.
            throw TokenStoreError(io: error)
        }
        // The umask may have taken bits away; the directory is the owner's alone either way.
        try self.call("chmod(\(directory))", chmod(directory, 0o700))
    }

    /// Reads `descriptor` to its end; `nil` when it holds more than `limit` bytes.
    static func readAll(_ descriptor: Int32, path: String, limit: Int) throws(TokenStoreError) -> Data? {
        var data = Data()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let count = try self.call("read(\(path))", read(descriptor, buffer.baseAddress, buffer.count))
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { return nil }
        }
    }

    /// Writes all of `data` to `descriptor`, continuing after short writes.
    static func writeAll(_ descriptor: Int32, _ data: Data, path: String) throws(TokenStoreError) {
        var offset = 0
        while offset < data.count {
            // The closure only passes the outcome out: `withUnsafeBytes` cannot throw a typed error.
            let outcome = data.withUnsafeBytes { bytes in
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                return Result { () throws(TokenStoreError) in
                    try self.call("write(\(path))", write(descriptor, rest.baseAddress, rest.count))
                }
            }
            let written = try outcome.get()
            guard written > 0 else { throw TokenStoreError(.io, "write(\(path)): no bytes written") }
            offset += written
        }
    }

    /// Closes a descriptor that was only read or locked: nothing depends on the outcome.
    static func closeQuietly(_ descriptor: Int32) {
        // Not retried on EINTR: Linux releases the descriptor even then.
        _ = close(descriptor)
    }

    /// Closes a descriptor that was written, reporting a failure (NFS reports write errors here).
    static func closeWritten(_ descriptor: Int32, path: String) throws(TokenStoreError) {
        if close(descriptor) == 0 || errno == EINTR { return }
        throw TokenStoreError(io: SystemError(call: "close(\(path))", errno: errno))
    }

    /// Makes a rename in `directory` durable: fsync(2) of the file does not cover the entry.
    static func syncDirectory(_ directory: String) throws(TokenStoreError) {
        let descriptor = try self.call(
            "open(\(directory))",
            open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        )
        defer { self.closeQuietly(descriptor) }
        try self.call("fsync(\(directory))", fsync(descriptor))
    }

    /// Whether anything (a file, a directory, a dangling link) is at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The mode of `path` in octal as `chmod` takes it, e.g. `0644`.
    static func octal(_ mode: mode_t) -> String {
        "0" + String(mode & 0o7777, radix: 8)
    }
}

extension TokenStoreError {
    /// An `io` error for a failed system call: "CALL(PATH): strerror".
    init(io error: SystemError) {
        self.init(.io, error.description)
    }
}
