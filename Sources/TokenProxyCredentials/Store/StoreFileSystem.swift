import Foundation
import TokenProxySupport

/// The file operations behind ``FileTokenStore``, made of the System helpers, each failure
/// mapped to a ``TokenStoreError`` with code `io` whose message names the call, the path and
/// `strerror(errno)`.
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

    /// Runs `body` (System calls, which retry EINTR) and maps its failure to an `io` error.
    @discardableResult
    static func io<T>(_ body: () throws(SystemError) -> T) throws(TokenStoreError) -> T {
        do {
            return try body()
        } catch {
            throw TokenStoreError(io: error)
        }
    }

    /// Creates `directory` and each missing parent with mode 0700; existing directories are
    /// left as they are.
    static func createDirectories(_ directory: String) throws(TokenStoreError) {
        do {
            _ = try FileStatus.of(path: directory)
            return
        } catch {
            guard error.isNoSuchFile else { throw TokenStoreError(io: error) }
        }
        let parent = self.directory(of: directory)
        if parent != directory { try self.createDirectories(parent) }
        do {
            try FileSystem.makeDirectory(directory, permissions: 0o700)
        } catch {
            if error.isAlreadyExisting { return }  // Another process made it in the meantime.
            throw TokenStoreError(io: error)
        }
        // The umask may have taken bits away; the directory is the owner's alone either way.
        try self.io { () throws(SystemError) in try FileSystem.changePermissions(directory, to: 0o700) }
    }

    /// Reads `descriptor` to its end; `nil` when it holds more than `limit` bytes.
    static func readAll(_ descriptor: Int32, path: String, limit: Int) throws(TokenStoreError) -> Data? {
        try self.io { () throws(SystemError) in
            try Descriptor.readAll(descriptor, limit: limit, name: "read(\(path))").map { Data($0) }
        }
    }

    /// Writes all of `data` to `descriptor`, continuing after short writes.
    static func writeAll(_ descriptor: Int32, _ data: Data, path: String) throws(TokenStoreError) {
        // The closure only passes the outcome out: `withUnsafeBytes` cannot throw a typed error.
        let outcome = data.withUnsafeBytes { bytes in
            Result { () throws(SystemError) in try Descriptor.writeAll(descriptor, bytes, name: "write(\(path))") }
        }
        try self.io { () throws(SystemError) in try outcome.get() }
    }

    /// Closes a descriptor that was only read or locked: nothing depends on the outcome.
    static func closeQuietly(_ descriptor: Int32) {
        Descriptor.close(descriptor)
    }

    /// Closes a descriptor that was written, reporting a failure (NFS reports write errors here).
    static func closeWritten(_ descriptor: Int32, path: String) throws(TokenStoreError) {
        try self.io { () throws(SystemError) in try Descriptor.closeWritten(descriptor, name: "close(\(path))") }
    }

    /// Opens (creating it 0600) the lock file at `path`, never through a symbolic link.
    static func openLockFile(_ path: String) throws(TokenStoreError) -> Int32 {
        try self.io { () throws(SystemError) in try FileSystem.openLockFile(path) }
    }

    /// fsync(2) of the file at `path` open as `descriptor`.
    static func sync(_ descriptor: Int32, path: String) throws(TokenStoreError) {
        try self.io { () throws(SystemError) in try Descriptor.sync(descriptor, name: "fsync(\(path))") }
    }

    /// rename(2) of `source` to `destination`, replacing it.
    static func rename(_ source: String, to destination: String) throws(TokenStoreError) {
        try self.io { () throws(SystemError) in try FileSystem.rename(source, to: destination) }
    }

    /// Makes a rename in `directory` durable: fsync(2) of the file does not cover the entry.
    static func syncDirectory(_ directory: String) throws(TokenStoreError) {
        let descriptor = try self.io { () throws(SystemError) in try FileSystem.openDirectory(directory) }
        defer { self.closeQuietly(descriptor) }
        try self.sync(descriptor, path: directory)
    }

    /// Whether anything (a file, a directory, a dangling link) is at `path`.
    static func exists(_ path: String) -> Bool {
        (try? FileStatus.ofLink(path)) != nil
    }

    /// The mode of the file `status` describes in octal as `chmod` takes it, e.g. `0644`.
    static func octal(_ status: FileStatus) -> String {
        "0" + String(status.permissions, radix: 8)
    }
}

extension TokenStoreError {
    /// An `io` error for a failed system call: "CALL(PATH): strerror".
    init(io error: SystemError) {
        self.init(.io, error.description)
    }
}
