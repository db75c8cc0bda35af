#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `stat(2)`, `lstat(2)` or `fstat(2)` told about one file: enough to apply ownership
/// and mode rules, and to tell one version of a file from the next.
package struct FileStatus: Equatable, Sendable {
    /// The kinds of file a directory entry can be.
    package enum Kind: Equatable, Sendable, CustomStringConvertible {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown

        /// A few words for messages: "a FIFO", "a directory".
        package var description: String {
            switch self {
            case .regular: return "a regular file"
            case .directory: return "a directory"
            case .symbolicLink: return "a symbolic link"
            case .fifo: return "a FIFO"
            case .socket: return "a socket"
            case .characterDevice: return "a character device"
            case .blockDevice: return "a block device"
            case .unknown: return "a special file"
            }
        }
    }

    /// `st_dev`.
    package var device: UInt64
    /// `st_ino`: a file replaced by a rename has another one.
    package var inode: UInt64
    /// `st_size`.
    package var size: Int64
    /// `st_mtime`, whole seconds and nanoseconds.
    package var modification: (seconds: Int, nanoseconds: Int)
    /// `st_ctime`, whole seconds and nanoseconds: moves on every write, chmod and chown.
    var change: (seconds: Int, nanoseconds: Int)
    /// `st_mode`: the kind and the permission bits.
    var mode: UInt32
    /// `st_uid`: the file's owner.
    package var owner: UInt32

    /// The kind of file.
    package var kind: Kind {
        switch self.mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): return .regular
        case UInt32(S_IFDIR): return .directory
        case UInt32(S_IFLNK): return .symbolicLink
        case UInt32(S_IFIFO): return .fifo
        case UInt32(S_IFSOCK): return .socket
        case UInt32(S_IFCHR): return .characterDevice
        case UInt32(S_IFBLK): return .blockDevice
        default: return .unknown
        }
    }

    /// Whether the sticky bit is set: in a directory, only an entry's owner (or the
    /// directory's) may remove or rename it.
    package var isSticky: Bool { self.mode & UInt32(S_ISVTX) != 0 }

    /// The permission bits, set-id and sticky bits included (`0o1777`, `0o600`).
    package var permissions: UInt32 { self.mode & 0o7777 }

    /// The permission bits in octal as `ls` and `chmod` write them: `0644`, `1777`.
    package var octalPermissions: String {
        let digits = String(self.permissions, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Whether both describe the same file, whatever happened to it since.
    package func isSameFile(as other: FileStatus) -> Bool {
        self.device == other.device && self.inode == other.inode
    }

    /// Two statuses are equal when every field is: the same file, unchanged.
    package static func == (lhs: FileStatus, rhs: FileStatus) -> Bool {
        lhs.isSameFile(as: rhs) && lhs.size == rhs.size && lhs.modification == rhs.modification
            && lhs.change == rhs.change && lhs.mode == rhs.mode && lhs.owner == rhs.owner
    }

    /// The status `info` describes.
    init(_ info: stat) {
        #if canImport(Darwin)
            let modification = info.st_mtimespec
            let change = info.st_ctimespec
        #else
            let modification = info.st_mtim
            let change = info.st_ctim
        #endif
        self.device = UInt64(truncatingIfNeeded: info.st_dev)
        self.inode = UInt64(truncatingIfNeeded: info.st_ino)
        self.size = Int64(truncatingIfNeeded: info.st_size)
        self.modification = (Int(modification.tv_sec), Int(modification.tv_nsec))
        self.change = (Int(change.tv_sec), Int(change.tv_nsec))
        self.mode = UInt32(truncatingIfNeeded: info.st_mode)
        self.owner = UInt32(truncatingIfNeeded: info.st_uid)
    }

    /// `lstat(2)` of `path`: a symbolic link is described, not followed.
    package static func ofLink(_ path: String) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallBlocking("lstat(\(path))", lstat(path, &info))
        return FileStatus(info)
    }

    /// `stat(2)` of `path`: a symbolic link is followed.
    package static func of(path: String) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallBlocking("stat(\(path))", stat(path, &info))
        return FileStatus(info)
    }

    /// `fstat(2)` of an open descriptor.
    package static func of(descriptor: Int32) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallBlocking("fstat", fstat(descriptor, &info))
        return FileStatus(info)
    }
}
