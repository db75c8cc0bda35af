import Foundation
import TokenProxySupport

extension FileTokenStore {
    /// The steps of a save, in order. ``FileTokenStore/faults`` is called before each.
    enum SaveStep: String, Sendable, CaseIterable {
        /// Creating `.BASENAME.tmp-PID-RANDOM` beside the store.
        case createTemp
        /// Writing the new contents into it.
        case write
        /// fsync(2) of the temporary file: its bytes are on disk before it gets the name.
        case fsync
        /// rename(2) over the store: readers see the old file or the new, never a mix.
        case rename
        /// fsync(2) of the directory, so the rename itself survives a power loss.
        case syncDirectory
    }

    /// The prefix of this store's temporary files: hidden, and never the store's own name.
    var temporaryPrefix: String { ".\(StoreFileSystem.baseName(of: self.path)).tmp-" }

    /// Replaces the file with `contents`; the caller holds the exclusive store lock.
    /// Encrypted when a key is configured (so a plain file is encrypted by its next change).
    func save(_ contents: TokenStoreContents) throws(TokenStoreError) {
        let data = try TokenStoreFileFormat.encode(contents, secret: self.secret(), cipher: self.cipher)
        self.removeLeftoverTemporaryFiles()
        try self.writeAtomically(data)
    }

    /// Temporary file, write, fsync, close, rename, fsync of the directory. A failure before
    /// the rename removes the temporary file and leaves the store as it was.
    private func writeAtomically(_ data: Data) throws(TokenStoreError) {
        try self.faults?(.createTemp)
        let (temporary, descriptor) = try self.createTemporaryFile()
        var isOpen = true
        do {
            try self.faults?(.write)
            try StoreFileSystem.writeAll(descriptor, data, path: temporary)
            try self.faults?(.fsync)
            try StoreFileSystem.sync(descriptor, path: temporary)
            isOpen = false
            try StoreFileSystem.closeWritten(descriptor, path: temporary)
            try self.faults?(.rename)
            try StoreFileSystem.rename(temporary, to: self.path)
        } catch {
            if isOpen { StoreFileSystem.closeQuietly(descriptor) }
            FileSystem.removeQuietly(temporary)
            throw error
        }
        try self.faults?(.syncDirectory)
        try StoreFileSystem.syncDirectory(self.directory)
    }

    /// Creates a fresh temporary file (`O_EXCL`, mode 0600) in the store's directory.
    private func createTemporaryFile() throws(TokenStoreError) -> (path: String, descriptor: Int32) {
        let prefix = StoreFileSystem.join(self.directory, self.temporaryPrefix)
        for _ in 0..<8 {
            let process = ProcessInfo.processInfo.processIdentifier
            let path = prefix + "\(process)-" + String(format: "%08x", UInt32.random(in: .min ... .max))
            do {
                return (path, try FileSystem.createExclusively(path, permissions: 0o600))
            } catch {
                guard error.isAlreadyExisting else { throw TokenStoreError(io: error) }
            }
        }
        throw TokenStoreError(.io, "cannot create a temporary file in \(self.directory): every name tried exists")
    }

    /// Removes temporary files a crashed save left behind. Every save runs under the
    /// exclusive store lock, so while it is held no temporary file is in use. Best effort:
    /// reads never look at these files anyway.
    private func removeLeftoverTemporaryFiles() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: self.directory) else { return }
        for name in names where name.hasPrefix(self.temporaryPrefix) {
            FileSystem.removeQuietly(StoreFileSystem.join(self.directory, name))
        }
    }

    /// Moves the unusable file aside to `PATH.corrupt-YYYYMMDDTHHMMSSZ` (with `-N` added
    /// when that exists) and returns `error` with a message naming both paths. The caller
    /// holds the exclusive store lock, or cannot write the directory at all.
    func moveAside(_ error: TokenStoreError) -> TokenStoreError {
        let problem = "\(self.path) is not a usable token store: \(error.message)"
        do {
            let aside = try self.renameAside()
            return TokenStoreError(
                error.code,
                "\(problem); moved it aside to \(aside), and the store starts empty"
            )
        } catch {
            return TokenStoreError(error.code, "\(problem); it could not be moved aside (\(error.message))")
        }
    }

    private func renameAside() throws(TokenStoreError) -> String {
        let base = "\(self.path).corrupt-\(Self.timestamp())"
        for attempt in 0..<1000 {
            let aside = attempt == 0 ? base : "\(base)-\(attempt)"
            if StoreFileSystem.exists(aside) { continue }
            try StoreFileSystem.rename(self.path, to: aside)
            try? StoreFileSystem.syncDirectory(self.directory)
            return aside
        }
        throw TokenStoreError(.io, "too many files named \(base)-N")
    }

    /// The current UTC time as `YYYYMMDDTHHMMSSZ` (ISO 8601 basic format).
    private static func timestamp() -> String {
        let formatter = ISO8601DateFormatter()
        // No separators: the basic format. The formatter's time zone is UTC unless set.
        formatter.formatOptions = [.withYear, .withMonth, .withDay, .withTime, .withTimeZone]
        return formatter.string(from: Date())
    }
}
