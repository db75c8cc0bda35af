import Foundation

/// The last contents read from each `{"file": PATH}` secret, so that a secret used on every
/// request costs one `stat` instead of one read while the file is unchanged.
///
/// An entry is used only while the file's stamp (device, inode, size, modification and
/// change times) is the same as when it was read; an atomic replace (a Kubernetes secret
/// update swaps a symbolic link) changes the inode, an in-place write the times. File times
/// are coarse (a few milliseconds), so, as Git does for its index, an entry whose file was
/// modified less than ``settleSeconds`` before it was read is not trusted and is read again.
final class SecretFileCache: @unchecked Sendable {
    // @unchecked Sendable is safe because `lock` guards `entries`.
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

    /// Runs `body` holding `lock` (`NSLock.withLock` needs macOS 14).
    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }

    /// The cache shared by every ``Secret``.
    static let shared = SecretFileCache()

    /// How long after its last modification a file's stamp is trusted to reveal changes.
    static let settleSeconds = 2.0

    private struct Entry {
        var stamp: ConfigurationFile.Stamp
        var value: String
        /// Whether the file was old enough when read for its stamp to be trusted.
        var settled: Bool
    }

    /// The trimmed contents of the file at `path`, from the cache when unchanged.
    func contents(of path: String) throws(ConfigurationError) -> String {
        if let stamp = ConfigurationFile.stamp(path: path),
            let entry = self.locked({ self.entries[path] }),
            entry.settled, entry.stamp == stamp
        {
            return entry.value
        }
        let data: Data
        let stamp: ConfigurationFile.Stamp
        do {
            (data, stamp) = try ConfigurationFile.read(path: path, maxBytes: Secret.maxFileBytes, what: "secret file")
        } catch {
            self.locked { _ = self.entries.removeValue(forKey: path) }
            throw ConfigurationError(message: error.message)
        }
        guard let text = String(data: Self.trimmingOneNewline(data), encoding: .utf8) else {
            throw ConfigurationError(message: "secret file \(path) is not valid UTF-8")
        }
        guard !text.isEmpty else {
            throw ConfigurationError(message: "secret file \(path) is empty")
        }
        let modified = Double(stamp.modificationSeconds) + Double(stamp.modificationNanoseconds) / 1e9
        let settled = modified + Self.settleSeconds < Date().timeIntervalSince1970
        self.locked { self.entries[path] = Entry(stamp: stamp, value: text, settled: settled) }
        return text
    }

    /// Forgets every entry (tests, and a configuration reload that wants fresh reads).
    func removeAll() {
        self.locked { self.entries.removeAll() }
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
