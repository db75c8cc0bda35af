#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file-system calls of the token store and of `command` credentials. Every descriptor
/// is opened close-on-exec (a program the proxy starts inherits none of them) and every
/// call goes through ``syscallBlocking(_:_:)``, so EINTR is retried and a failure is a
/// ``SystemError`` naming the call and the path.
package enum FileSystem {
    /// Opens `path` for reading without following a final symbolic link (ELOOP then) and
    /// without waiting: `open(2)` of a FIFO would wait for a writer.
    package static func openForReading(_ path: String) throws(SystemError) -> Int32 {
        try syscallBlocking("open(\(path))", open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY))
    }

    /// Opens (creating it with mode 0600 when missing) a lock file to hold a ``FileLock`` on,
    /// never through a symbolic link.
    package static func openLockFile(_ path: String) throws(SystemError) -> Int32 {
        try syscallBlocking("open(\(path))", open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600))
    }

    /// Creates `path` for writing with `permissions`, failing with EEXIST when anything is
    /// there already (`O_EXCL`: a link planted there is not followed).
    package static func createExclusively(_ path: String, permissions: UInt32) throws(SystemError) -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        return try syscallBlocking("open(\(path))", open(path, flags, mode_t(permissions)))
    }

    /// Opens the directory `path` for ``Descriptor/sync(_:name:)``.
    package static func openDirectory(_ path: String) throws(SystemError) -> Int32 {
        try syscallBlocking("open(\(path))", open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
    }

    /// Opens `/dev/null` for reading: the standard input of a program that must read nothing.
    package static func openNullDevice() throws(SystemError) -> Int32 {
        try syscallBlocking("open(/dev/null)", open("/dev/null", O_RDONLY | O_CLOEXEC))
    }

    /// `mkdir(2)` of `path` with `permissions` (less the umask).
    package static func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError) {
        try syscallBlocking("mkdir(\(path))", mkdir(path, mode_t(permissions)))
    }

    /// `chmod(2)` of `path`.
    package static func changePermissions(_ path: String, to permissions: UInt32) throws(SystemError) {
        try syscallBlocking("chmod(\(path))", chmod(path, mode_t(permissions)))
    }

    /// `rename(2)`: atomically gives `source` the name `destination`, replacing what was there.
    package static func rename(_ source: String, to destination: String) throws(SystemError) {
        try syscallBlocking("rename(\(source), \(destination))", systemRename(source, destination))
    }

    /// Removes the file `path` if it can; for clean-up, where nothing depends on the outcome.
    package static func removeQuietly(_ path: String) {
        _ = unlink(path)
    }

    /// The effective user id of the process: the owner its new files get.
    package static var currentUser: UInt32 {
        UInt32(geteuid())
    }

    /// What the symbolic link at `path` points to (`readlink(2)`); ENAMETOOLONG for a target
    /// longer than a path may be.
    package static func linkTarget(_ path: String) throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count)
        guard count >= 0 else { throw SystemError(call: "readlink(\(path))", errno: errno) }
        guard count < buffer.count else { throw SystemError(call: "readlink(\(path))", errno: ENAMETOOLONG) }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The value of the environment variable `name`, or nil when it is not set.
    package static func environmentValue(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// `rename(2)` under a name that does not clash with ``FileSystem/rename(_:to:)``.
private func systemRename(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}

extension SystemError {
    /// ENOENT: nothing at the path (or a directory on the way is missing).
    package var isNoSuchFile: Bool { self.errno == ENOENT }
    /// EEXIST: something is at the path already.
    package var isAlreadyExisting: Bool { self.errno == EEXIST }
    /// ELOOP: the path ends at a symbolic link a call was told not to follow.
    package var isSymbolicLink: Bool { self.errno == ELOOP }
    /// EACCES or EROFS: this user may not write there, or nobody may.
    package var isNotWritable: Bool { self.errno == EACCES || self.errno == EROFS }

    /// The description of ELOOP, for a walk of links that goes on too long.
    package static var tooManyLinksReason: String { String(cString: strerror(ELOOP)) }
    /// The description of ENOTDIR, for a path whose step is not a directory.
    package static var notADirectoryReason: String { String(cString: strerror(ENOTDIR)) }
}
