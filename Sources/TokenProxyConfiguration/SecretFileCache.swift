import Foundation
import Synchronization
import TokenProxySupport

/// The last contents read from each `{"file": PATH}` secret, so that a secret used on every
/// request costs a walk of its path with `lstat` instead of one read while the file is unchanged.
///
/// Every use walks the path again and applies ``SecretFileRules`` to each directory and link
/// on the way and to the file (``SecretFilePath``), so a file made writable by others, a link
/// swapped by another user or a file planted in a shared directory is refused at the next
/// use, not at the next start. An entry is used only while the file the path leads to has the
/// same status (device, inode, size, mode, owner, modification and change times) as when it
/// was read; an atomic replace (a Kubernetes secret update swaps a symbolic link) changes the
/// inode, an in-place write the times. File times are coarse (a few milliseconds), so, as Git
/// does for its index, an entry whose file was modified less than ``settleSeconds`` before it
/// was read is not trusted and is read again.
final class SecretFileCache: Sendable {
    private let entries = Mutex<[String: Entry]>([:])

    /// The cache shared by every ``Secret``.
    static let shared = SecretFileCache()

    /// How long after its last modification a file's status is trusted to reveal changes.
    static let settleSeconds = 2.0

    private struct Entry {
        var status: FileStatus
        var value: String
        /// Whether the file was old enough when read for its status to be trusted.
        var settled: Bool
    }

    /// The trimmed contents of the file at `path`, from the cache when unchanged. The error
    /// names the file and what is wrong with it, never its contents.
    func contents(of path: String) throws(ConfigurationError) -> String {
        do {
            return try self.checkedContents(of: path, rules: .current)
        } catch {
            self.entries.withLockedValue { _ = $0.removeValue(forKey: path) }
            throw ConfigurationError(message: error.message)
        }
    }

    /// ``contents(of:)`` under `rules`, failing with the kind of failure.
    func checkedContents(of path: String, rules: SecretFileRules) throws(SecretFileError) -> String {
        let found = try SecretFilePath.check(path, rules: rules, maxBytes: Secret.maxFileBytes)
        if let entry = self.entries.withLockedValue({ $0[path] }), entry.settled, entry.status == found.status {
            return entry.value
        }
        let (bytes, status) = try SecretFilePath.read(path, rules: rules, maxBytes: Secret.maxFileBytes)
        guard let text = String(data: Self.trimmingOneNewline(Data(bytes)), encoding: .utf8) else {
            throw SecretFileError(.unreadable, "secret file \(path) is not valid UTF-8")
        }
        guard !text.isEmpty else {
            throw SecretFileError(.unreadable, "secret file \(path) is empty")
        }
        let modified = Double(status.modification.seconds) + Double(status.modification.nanoseconds) / 1e9
        let settled = modified + Self.settleSeconds < Date().timeIntervalSince1970
        self.entries.withLockedValue { $0[path] = Entry(status: status, value: text, settled: settled) }
        return text
    }

    /// Forgets every entry (tests, and a configuration reload that wants fresh reads).
    func removeAll() {
        self.entries.withLockedValue { $0.removeAll() }
    }

    /// `data` without one trailing `"\n"` or `"\r\n"`: editors add one, and a token with a
    /// newline in it would be refused as a header value.
    static func trimmingOneNewline(_ data: Data) -> Data {
        var bytes = data
        if bytes.last == UInt8(ascii: "\n") {
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        }
        return bytes
    }
}
