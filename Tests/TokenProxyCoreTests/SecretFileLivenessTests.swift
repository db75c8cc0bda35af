import Dispatch
import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// A secret file changed while the proxy runs: a read never waits on what replaced it, and
/// the ownership and mode rules (`docs/reference/security.md`, "Secret files") hold at every read, not
/// only at start-up. These tests run as root, as CI runs them; "another user" is uid 65534.
@Suite struct SecretFileLivenessTests {
    /// The uid that stands for another user of the machine.
    static let otherUser: uid_t = 65534

    /// Gives `path` (a symbolic link itself, not its target) to ``otherUser``.
    private func giveToOtherUser(_ path: String) throws {
        guard lchown(path, Self.otherUser, Self.otherUser) == 0 else {
            throw TestFailure(message: "lchown \(path): these tests need root, as CI runs them")
        }
    }

    /// The message of the error `secret` fails with, or `nil` when it resolves.
    private func failure(_ secret: Secret) -> String? {
        do {
            _ = try secret.resolve()
            return nil
        } catch {
            return error.description
        }
    }

    /// Runs `read` on a thread of its own and waits for it at most 20 seconds. A read that
    /// is still waiting then is released by `unblock` (a writer opening the FIFO), so a
    /// regression fails the test instead of hanging it; returns whether `read` ended alone.
    private func endsWithoutHelp(_ read: @escaping @Sendable () -> Void, unblock: () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            read()
            done.signal()
        }
        if done.wait(timeout: .now() + 20) == .success { return true }
        unblock()
        _ = done.wait(timeout: .now() + 20)
        return false
    }

    /// Opens the FIFO at `path` for writing and closes it, so a reader waiting in `open` or
    /// `read` goes on (and sees an empty file).
    private func releaseReader(of path: String) {
        let writer = open(path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
    }

    @Test func aFIFOSwappedInAtRuntimeFailsPromptly() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "before-the-fifo")
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "before-the-fifo")
        #expect(unlink(path) == 0)
        #expect(mkfifo(path, 0o600) == 0)
        let message = Mutex<String?>(nil)
        let ended = self.endsWithoutHelp({ message.withLockedValue { $0 = self.failure(secret) } }) {
            self.releaseReader(of: path)
        }
        #expect(ended, "the read waited on the FIFO")
        let text = message.withLockedValue { $0 } ?? ""
        #expect(text.contains(path) && text.contains("it is a FIFO, not a regular file"), "\(text)")
    }

    @Test func theBoundedReadNeverWaitsOnAFIFO() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = directory.path + "/fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let refused = Mutex<Bool>(false)
        let ended = self.endsWithoutHelp({ refused.withLockedValue { $0 = Self.isRefusedAsAFIFO(path) } }) {
            self.releaseReader(of: path)
        }
        #expect(ended, "open(2) waited for a writer")
        #expect(refused.withLockedValue { $0 })
    }

    /// Whether ``BoundedFileRead`` refuses the file at `path` as a FIFO.
    private static func isRefusedAsAFIFO(_ path: String) -> Bool {
        let result = Result { () throws(BoundedFileRead.Failure) in try BoundedFileRead.read(path: path, maxBytes: 16) }
        guard case .failure(.notRegular(.fifo)) = result else { return false }
        return true
    }

    @Test func aDirectoryInsteadOfTheFileIsRefused() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "before-the-directory")
        #expect(try Secret.file(path).resolve() == "before-the-directory")
        #expect(unlink(path) == 0)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(self.failure(.file(path)) == "cannot read secret file \(path): it is a directory, not a regular file")
    }

    @Test func aFileOverOneMebibyteIsRefusedAndOneOfExactlyOneIsRead() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", String(repeating: "a", count: 1 << 20))
        #expect(try Secret.file(path).resolve().utf8.count == 1 << 20)
        try directory.write("token", String(repeating: "b", count: (1 << 20) + 1))
        #expect(self.failure(.file(path)) == "cannot read secret file \(path): larger than 1048576 bytes")
    }

    @Test(arguments: [false, true])
    func aFileMadeWritableByOthersAfterAGoodReadIsRefused(ownedByOtherUser: Bool) throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "was-private", mode: ownedByOtherUser ? 0o644 : 0o600)
        if ownedByOtherUser { try self.giveToOtherUser(path) }
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "was-private")
        #expect(chmod(path, 0o666) == 0)
        let message = try #require(self.failure(secret))
        let fix = ownedByOtherUser ? "chmod o-w \(path) (as its owner, uid 65534)" : "chmod 600 \(path)"
        #expect(message == "\(path) is writable by others (mode 0666); fix it with: \(fix)")
        #expect(!message.contains("was-private"))
    }

    @Test func anOwnFileOpenedToOthersAfterAGoodReadIsRefused() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "own-private-value")
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "own-private-value")
        #expect(chmod(path, 0o644) == 0)
        #expect(
            self.failure(secret)
                == "\(path) is readable or writable by group or others (mode 0644); fix it with: chmod 600 \(path)"
        )
        #expect(chmod(path, 0o600) == 0)
        #expect(try secret.resolve() == "own-private-value")
    }

    @Test func anotherUsersReadOnlyFileIsUsed() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "mounted-by-the-platform", mode: 0o644)
        try self.giveToOtherUser(path)
        #expect(try Secret.file(path).resolve() == "mounted-by-the-platform")
    }

    @Test func aFileAnotherUserPlantsInASharedStickyDirectoryIsRefused() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let shared = directory.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        #expect(chmod(shared, 0o1777) == 0)
        let path = shared + "/token"
        #expect(self.failure(.file(path))?.contains("No such file or directory") == true)
        try directory.write("shared/token", "planted-by-another-user", mode: 0o644)
        try self.giveToOtherUser(path)
        let message = try #require(self.failure(.file(path)))
        #expect(message.hasPrefix("secret file \(path) is refused: \(path) belongs to uid 65534 in the shared"))
        #expect(!message.contains("planted-by-another-user"))
        // A file of this user's own in the same directory is used.
        try directory.write("shared/own", "own-file-in-tmp")
        #expect(try Secret.file(shared + "/own").resolve() == "own-file-in-tmp")
    }

    @Test func aDirectoryOthersMayWriteWithoutTheStickyBitIsRefused() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "in-an-open-directory")
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "in-an-open-directory")
        #expect(chmod(directory.path, 0o777) == 0)
        let message = try #require(self.failure(secret))
        #expect(message.contains("the directory \(directory.path) is writable by others without the sticky bit"))
        #expect(message.contains("chmod o-w \(directory.path)"))
    }

    @Test func aSymbolicLinkOfAnotherUserSwappedInIsNotFollowed() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let real = try directory.write("real", "the-real-secret")
        let rootOnly = try directory.write("root-only", "root-only-value")
        let path = directory.path + "/token"
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: real)
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "the-real-secret")
        let swapped = directory.path + "/swapped"
        try FileManager.default.createSymbolicLink(atPath: swapped, withDestinationPath: rootOnly)
        try self.giveToOtherUser(swapped)
        #expect(rename(swapped, path) == 0)
        let message = try #require(self.failure(secret))
        #expect(message.contains("the symbolic link \(path) belongs to uid 65534"))
        #expect(!message.contains("root-only-value"))
    }

    @Test func errorsNameTheVariableOrTheFile() throws {
        let name = "TP_SECRET_LIVENESS_UNSET_\(UInt32.random(in: 0...UInt32.max))"
        #expect(self.failure(.environment(name)) == "environment variable \(name) is not set")
        let directory = try ConfigurationTemporaryDirectory()
        let missing = directory.path + "/absent/token"
        #expect(
            self.failure(.file(missing))
                == "cannot read secret file \(missing): \(directory.path)/absent: No such file or directory"
        )
    }
}
