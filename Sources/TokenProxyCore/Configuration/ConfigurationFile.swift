import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small, bounded file reads for the configuration file and secret files, with messages
/// that name the file and the system's reason (`No such file or directory`).
enum ConfigurationFile {
    /// What identifies one version of a file: when any field changes, the contents may have.
    struct Stamp: Equatable, Sendable {
        /// `st_dev`.
        var device: UInt64
        /// `st_ino`: changes when the file is replaced by a rename.
        var inode: UInt64
        /// `st_size`.
        var size: Int64
        /// `st_mtime`, whole seconds.
        var modificationSeconds: Int
        /// `st_mtime`, nanoseconds.
        var modificationNanoseconds: Int
        /// `st_ctime`, whole seconds.
        var changeSeconds: Int
        /// `st_ctime`, nanoseconds.
        var changeNanoseconds: Int
        /// The permission bits (`0o600`...).
        var permissions: UInt32
        /// `st_uid`: the file's owner.
        var owner: UInt32
    }

    /// Why a file could not be read; the message names the path, never the contents.
    struct ReadError: Error {
        /// e.g. "cannot read /run/secrets/x: Permission denied".
        var message: String
    }

    /// The stamp of the file at `path` (following symbolic links), or `nil` when it cannot be stat'ed.
    static func stamp(path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Stamp(info)
    }

    /// Reads the whole file at `path`, refusing directories and files over `maxBytes`.
    static func read(path: String, maxBytes: Int, what: String) throws(ReadError) -> (data: Data, stamp: Stamp) {
        let descriptor = self.retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw self.error(what, path, errno) }
        defer { _ = close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw self.error(what, path, errno) }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw ReadError(message: "cannot read \(what) \(path): it is a directory")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { bytes in
                self.retryingInterrupts { systemRead(descriptor, bytes.baseAddress, bytes.count) }
            }
            if count < 0 { throw self.error(what, path, errno) }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            if data.count > maxBytes {
                throw ReadError(message: "cannot read \(what) \(path): larger than \(maxBytes) bytes")
            }
        }
        return (data, Stamp(info))
    }

    /// Runs a system call again while it fails with `EINTR`.
    private static func retryingInterrupts<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    /// "cannot read secret file PATH: REASON".
    private static func error(_ what: String, _ path: String, _ code: Int32) -> ReadError {
        ReadError(message: "cannot read \(what) \(path): \(String(cString: strerror(code)))")
    }
}

/// `read(2)` under a name that does not clash with the enclosing type's own `read` method.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

extension ConfigurationFile.Stamp {
    /// The stamp of a `stat` result.
    fileprivate init(_ info: stat) {
        #if canImport(Darwin)
            let modification = info.st_mtimespec
            let change = info.st_ctimespec
        #else
            let modification = info.st_mtim
            let change = info.st_ctim
        #endif
        self.init(
            device: UInt64(truncatingIfNeeded: info.st_dev),
            inode: UInt64(truncatingIfNeeded: info.st_ino),
            size: Int64(info.st_size),
            modificationSeconds: Int(modification.tv_sec),
            modificationNanoseconds: Int(modification.tv_nsec),
            changeSeconds: Int(change.tv_sec),
            changeNanoseconds: Int(change.tv_nsec),
            permissions: UInt32(info.st_mode) & 0o7777,
            owner: UInt32(info.st_uid)
        )
    }
}
