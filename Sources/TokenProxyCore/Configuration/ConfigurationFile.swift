import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bounded, non-blocking read of the configuration file, with messages
/// that name the file and the system's reason (`No such file or directory`).
enum ConfigurationFile {
    /// Why a file could not be read; the message names the path, never the contents.
    struct ReadError: Error {
        /// e.g. "cannot read /run/secrets/x: Permission denied".
        var message: String
    }

    /// Reads the whole file at `path`, refusing anything but a regular file (a directory, a
    /// FIFO: opened non-blocking, so a FIFO never holds the reader) and files over `maxBytes`.
    static func read(path: String, maxBytes: Int, what: String) throws(ReadError) -> Data {
        let descriptor = self.retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        guard descriptor >= 0 else { throw self.error(what, path, errno) }
        defer { _ = close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw self.error(what, path, errno) }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw ReadError(message: "cannot read \(what) \(path): it is a directory")
        }
        if (info.st_mode & S_IFMT) != S_IFREG {
            throw ReadError(message: "cannot read \(what) \(path): it is not a regular file")
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
        return data
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
