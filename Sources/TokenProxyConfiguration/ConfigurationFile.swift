import Foundation
import TokenProxySupport

/// The bounded, non-blocking read of the configuration file, with messages
/// that name the file and the system's reason (`No such file or directory`).
enum ConfigurationFile {
    /// Why a file could not be read; the message names the path, never the contents.
    struct ReadError: Error {
        /// e.g. "cannot read /run/secrets/x: Permission denied".
        var message: String
    }

    /// Reads the whole file at `path` (``BoundedFileRead``: non-blocking, so a FIFO never
    /// holds the reader), refusing anything but a regular file and files over `maxBytes`.
    static func read(path: String, maxBytes: Int, what: String) throws(ReadError) -> Data {
        do {
            return Data(try BoundedFileRead.read(path: path, maxBytes: maxBytes, followingLinks: true).bytes)
        } catch {
            let reason: String
            switch error {
            case .system(let failure): reason = failure.reason
            case .notRegular(.directory): reason = "it is a directory"
            case .notRegular: reason = "it is not a regular file"
            case .tooLarge(let limit): reason = "larger than \(limit) bytes"
            }
            throw ReadError(message: "cannot read \(what) \(path): \(reason)")
        }
    }
}
