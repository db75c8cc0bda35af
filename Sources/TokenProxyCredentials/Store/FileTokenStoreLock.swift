import Crypto
import Foundation
import Synchronization
import TokenProxySupport

/// A provider's refresh lock held through ``FileTokenStore``: an exclusive flock(2) on
/// `PATH.NAME.lock` beside the store file.
///
/// flock locks belong to an open file description, so every holder opens the file itself:
/// two holders conflict whether they are two processes or two threads of one. Closing the
/// descriptor (``release()``, or deinit) releases the lock; the kernel releases it when a
/// process dies, so a crash never leaves a provider locked. Lock files are never deleted:
/// deleting one while another process waits on it would let two holders in at once.
final class FileTokenStoreLock: TokenStoreLock {
    /// The lock file's path.
    let path: String
    /// The open descriptor holding the lock, or -1 once released. Behind a Mutex because the
    /// lock is shared between threads and ``release()`` may run on several at once: exactly
    /// one closes the descriptor, so a number the system has handed out again is never
    /// closed by mistake. The Mutex also makes the class `Sendable` without `@unchecked`.
    private let descriptor: Mutex<Int32>

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    deinit {
        self.release()
    }

    /// Closes the descriptor, which releases the lock; later calls do nothing.
    func release() {
        let descriptor = self.descriptor.withLockedValue { descriptor in
            defer { descriptor = -1 }
            return descriptor
        }
        if descriptor >= 0 { StoreFileSystem.closeQuietly(descriptor) }
    }

    /// The file name part for `provider`: the name itself when it is `[A-Za-z0-9_-]{1,64}`,
    /// else the first 16 hex digits of its SHA-256 (no separators, dots or odd bytes reach the
    /// file system). A hashed name that happens to equal a plain one only shares a lock.
    static func fileComponent(for provider: String) -> String {
        let plain = provider.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
        if plain, (1...64).contains(provider.utf8.count) { return provider }
        let digest = SHA256.hash(data: Data(provider.utf8))
        return String(Hex.encode(digest).prefix(16))
    }

    /// Takes the exclusive lock on `path`, polling with short sleeps (5 ms doubling to 50 ms)
    /// until `deadline`, then `lock_timeout`. It tries at least once, even past the deadline.
    static func acquire(
        path: String,
        provider: String,
        deadline: ContinuousClock.Instant
    ) throws(TokenStoreError) -> FileTokenStoreLock {
        let descriptor = try StoreFileSystem.openLockFile(path)
        do {
            try Self.lock(descriptor, .exclusive, path: path, deadline: deadline)
        } catch {
            StoreFileSystem.closeQuietly(descriptor)
            guard error.code == .lockTimeout else { throw error }
            throw TokenStoreError(
                .lockTimeout,
                "timed out waiting for the refresh lock of provider \(provider) (\(path)): "
                    + "another process or request is obtaining its token"
            )
        }
        return FileTokenStoreLock(path: path, descriptor: descriptor)
    }

    /// Takes the flock in `mode` on `descriptor` (``FileLock``), polling until `deadline`,
    /// then `lock_timeout`: a process that holds a lock for ever (stopped, hung on a disk)
    /// costs a bounded wait, never a thread. It tries at least once, even past the deadline.
    static func lock(
        _ descriptor: Int32,
        _ mode: FileLock.Mode,
        path: String,
        deadline: ContinuousClock.Instant
    ) throws(TokenStoreError) {
        let taken = try StoreFileSystem.io { () throws(SystemError) in
            try FileLock.lock(descriptor, mode, name: "flock(\(path))", deadline: deadline)
        }
        guard taken else { throw TokenStoreError(.lockTimeout, "timed out waiting for the lock \(path)") }
    }
}
