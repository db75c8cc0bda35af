import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// The token store in one JSON file (`docs/reference/token-store.md`), optionally
/// encrypted with AES-256-GCM; the format is described in `docs/reference/token-store.md`.
///
/// Processes (and threads) sharing the file coordinate with flock(2) on `PATH.lock`: reads
/// hold it shared, updates exclusive across their re-read, change and write, so no update
/// is lost. Writes go to a temporary file that is fsync'ed and renamed over the store, so a
/// crash leaves the old contents or the new, never a mix. A file that is not a token store
/// is moved aside and reported, never overwritten; one that is open to other users, owned
/// by another user or a symbolic link is refused (RFC 6819 §5.3.3).
final class FileTokenStore: TokenStore {
    /// The store file's path.
    let path: String
    /// The directory holding the store, its lock files and its temporary files.
    let directory: String
    /// The configured `encryption_key`, resolved on every use (a key file may change).
    let encryptionKey: Secret?
    /// Encryption with derived keys cached per salt.
    let cipher = TokenStoreCipher()
    /// Test seam: called before each step of a save. Throwing aborts the save at that step
    /// as a failing system call there would: the temporary file is removed and the error
    /// thrown from ``update(_:)``.
    let faults: (@Sendable (SaveStep) throws(TokenStoreError) -> Void)?

    /// A store at `path`, encrypted under `encryptionKey` when one is given. Nothing is
    /// touched until the first use; directories are created by the first write.
    convenience init(path: String, encryptionKey: Secret?) {
        self.init(path: path, encryptionKey: encryptionKey, faults: nil)
    }

    /// A store whose saves call `faults` before each step, and whose reads and updates wait
    /// `lockWait` for the store-wide lock (tests).
    init(
        path: String,
        encryptionKey: Secret?,
        faults: (@Sendable (SaveStep) throws(TokenStoreError) -> Void)?,
        lockWait: Duration = .seconds(10)
    ) {
        self.lockWait = lockWait
        self.path = path
        self.directory = StoreFileSystem.directory(of: path)
        self.encryptionKey = encryptionKey
        self.faults = faults
    }

    /// The file's path, for messages.
    var location: String { self.path }

    /// The file's device, inode, size and modification time: a write renames a new file
    /// over the store, so any change shows. nil when there is no file (or it cannot be seen).
    func revision() -> String? {
        guard let status = try? FileStatus.of(path: self.path) else { return nil }
        let modification = status.modification
        return "\(status.device):\(status.inode):\(status.size):\(modification.seconds).\(modification.nanoseconds)"
    }

    /// How long a read or an update waits for the store-wide lock, which every holder keeps
    /// only across one read or one write (10 s).
    let lockWait: Duration

    private func lockDeadline() -> ContinuousClock.Instant {
        .now + self.lockWait
    }

    /// The store-wide lock file, `PATH.lock`.
    var lockPath: String { self.path + ".lock" }

    /// The contents, read under the shared store lock. A file that is not a token store is
    /// moved aside (under the exclusive lock) and reported with both paths; the read after
    /// that finds no file and returns an empty store.
    func read() throws(TokenStoreError) -> TokenStoreContents {
        let lock: Int32?
        do {
            lock = try FileSystem.openLockFile(self.lockPath)
        } catch {
            if error.isNoSuchFile {
                return TokenStoreContents()  // No directory, so no store yet.
            }
            // A directory this user cannot write in: nobody can rename a new store in either.
            guard error.isNotWritable else { throw TokenStoreError(io: error) }
            lock = nil
        }
        defer {
            if let lock { StoreFileSystem.closeQuietly(lock) }
        }
        if let lock { try FileTokenStoreLock.lock(lock, .shared, path: self.lockPath, deadline: self.lockDeadline()) }
        if case .contents(let contents) = try self.load() { return contents }
        // Moving the file aside is a change: retry under the exclusive lock, where no update
        // can be halfway, and move aside only what is still unusable then.
        if let lock {
            try FileTokenStoreLock.lock(lock, .exclusive, path: self.lockPath, deadline: self.lockDeadline())
        }
        switch try self.load() {
        case .contents(let contents):
            return contents
        case .unusable(let error):
            throw self.moveAside(error)
        }
    }

    /// Re-reads the contents under the exclusive store lock, applies `body` and, when it
    /// changed anything, writes the result atomically before releasing the lock.
    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        try StoreFileSystem.createDirectories(self.directory)
        let lock = try StoreFileSystem.openLockFile(self.lockPath)
        defer { StoreFileSystem.closeQuietly(lock) }
        try FileTokenStoreLock.lock(lock, .exclusive, path: self.lockPath, deadline: self.lockDeadline())
        var contents: TokenStoreContents
        switch try self.load() {
        case .contents(let found):
            contents = found
        case .unusable(let error):
            throw self.moveAside(error)
        }
        let before = contents
        let result = body(&contents)
        if contents != before { try self.save(contents) }
        return result
    }

    /// Takes the provider's lock file, `PATH.NAME.lock`, exclusively (see
    /// ``FileTokenStoreLock``), polling until `deadline`.
    func lockProvider(
        _ name: String,
        deadline: ContinuousClock.Instant
    ) throws(TokenStoreError) -> any TokenStoreLock {
        try StoreFileSystem.createDirectories(self.directory)
        let path = "\(self.path).\(FileTokenStoreLock.fileComponent(for: name)).lock"
        return try FileTokenStoreLock.acquire(path: path, provider: name, deadline: deadline)
    }

    /// The configured key's value; nil when none is configured. A configured key that cannot
    /// be read is an error: the store is then never written unencrypted.
    func secret() throws(TokenStoreError) -> String? {
        guard let key = self.encryptionKey else { return nil }
        do {
            return try key.resolve()
        } catch {
            let reason = error.problems.map(\.message).joined(separator: "; ")
            throw TokenStoreError(
                .encryptionKeyMissing,
                "token_store.encryption_key (\(key)) cannot be read: \(reason)"
            )
        }
    }

    /// What ``load()`` found.
    private enum Loaded {
        /// The contents (empty when there is no file).
        case contents(TokenStoreContents)
        /// A file that is not a token store this build can read, to move aside.
        case unusable(TokenStoreError)
    }

    /// Reads and decodes the file; the caller holds the store lock.
    private func load() throws(TokenStoreError) -> Loaded {
        do {
            guard let data = try self.readFile() else { return .contents(TokenStoreContents()) }
            return .contents(try TokenStoreFileFormat.decode(data, secret: self.secretForReading, cipher: self.cipher))
        } catch {
            switch error.code {
            case .corrupt, .unsupportedVersion:
                return .unusable(error)
            case .decryptionFailed:
                throw TokenStoreError(
                    error.code,
                    "\(self.path) cannot be decrypted: \(error.message); it is left as it is"
                )
            default:
                throw error
            }
        }
    }

    /// The file's bytes, nil when there is none. Refuses a symbolic link, a file open to
    /// group or others and one owned by another user.
    private func readFile() throws(TokenStoreError) -> Data? {
        let descriptor: Int32
        do {
            // Non-blocking: a FIFO in the store's place must not hold the reader.
            descriptor = try FileSystem.openForReading(self.path)
        } catch {
            if error.isNoSuchFile { return nil }
            if error.isSymbolicLink, self.isSymbolicLink {
                throw TokenStoreError(.insecurePermissions, self.symbolicLinkProblem)
            }
            throw TokenStoreError(io: error)
        }
        defer { StoreFileSystem.closeQuietly(descriptor) }
        let status = try StoreFileSystem.io { () throws(SystemError) in try FileStatus.of(descriptor: descriptor) }
        if let problem = Self.fileProblem(self.path, status) { throw problem }
        guard let data = try StoreFileSystem.readAll(descriptor, path: self.path, limit: StoreFileSystem.maxFileBytes)
        else {
            throw TokenStoreError(.corrupt, "it is larger than \(StoreFileSystem.maxFileBytes) bytes")
        }
        return data
    }

    /// The key for an encrypted file: `encryption_key_missing` when none is configured.
    private func secretForReading() throws(TokenStoreError) -> String {
        guard let secret = try self.secret() else {
            throw TokenStoreError(
                .encryptionKeyMissing,
                "\(self.path) is encrypted and no key is configured: set token_store.encryption_key "
                    + "to the key it was written with (the file is left as it is)"
            )
        }
        return secret
    }
}
