import Foundation
import Testing

@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the file token store refuses: files open to others or owned by someone else,
/// symbolic links, open directories; and how failing system calls are reported.
@Suite("Token store permissions")
struct TokenStorePermissionTests {
    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o610, 0o601])
    func fileOpenToOthersIsRefusedWithTheFix(mode: Int) throws {
        let fixture = try TokenStoreFixture()
        try fixture.write(Data(#"{"version": 1}"#.utf8), mode: mode_t(mode))
        let before = fixture.bytes()
        for error in [
            storeError { _ = try fixture.store().read() },
            storeError { try fixture.store().update { $0 = TokenStoreFixture.sample } },
            storeError { try fixture.store().checkPermissions() },
        ] {
            #expect(error?.code == .insecurePermissions)
            #expect(error?.message.contains("chmod 600 \(fixture.storePath)") == true)
        }
        #expect(fixture.bytes() == before)
        #expect(fixture.mode(fixture.storePath) == mode_t(mode))
        chmod(fixture.storePath, 0o600)
        #expect(try fixture.store().read() == TokenStoreContents())
    }

    @Test func symbolicLinkIsRefused() throws {
        let fixture = try TokenStoreFixture()
        let target = fixture.root + "/elsewhere.json"
        try fixture.write(Data(#"{"version": 1}"#.utf8), to: target)
        #expect(symlink(target, fixture.storePath) == 0)
        for error in [
            storeError { _ = try fixture.store().read() },
            storeError { try fixture.store().update { $0 = TokenStoreFixture.sample } },
            storeError { try fixture.store().checkPermissions() },
        ] {
            #expect(error?.code == .insecurePermissions)
            #expect(error?.message.contains("symbolic link") == true)
        }
        #expect(fixture.text(target) == #"{"version": 1}"#)
        #expect(((fixture.info()?.st_mode ?? 0) & S_IFMT) == S_IFLNK)
    }

    @Test func checkPermissionsAcceptsAMissingFileAndRefusesAnOpenDirectory() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().checkPermissions()
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        try fixture.store().checkPermissions()
        chmod(fixture.storeDirectory, 0o777)
        let error = storeError { try fixture.store().checkPermissions() }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.message.contains("chmod 700 \(fixture.storeDirectory)") == true)
        chmod(fixture.storeDirectory, 0o700)
    }

    @Test(.enabled(if: geteuid() == 0, "only root can give a file away"))
    func fileOwnedByAnotherUserIsRefusedWithTheFix() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        #expect(chown(fixture.storePath, 4242, 4242) == 0)
        for error in [
            storeError { _ = try fixture.store().read() },
            storeError { try fixture.store().checkPermissions() },
        ] {
            #expect(error?.code == .insecurePermissions)
            #expect(error?.message.contains("uid 4242") == true)
            #expect(error?.message.contains("chown \(geteuid()) \(fixture.storePath)") == true)
        }
    }

    @Test func failingSystemCallIsReportedWithItsNameAndReason() throws {
        let fixture = try TokenStoreFixture()
        #expect(FileManager.default.createFile(atPath: fixture.root + "/state", contents: Data("a file".utf8)))
        let store = FileTokenStore(path: fixture.root + "/state/tokenproxy/tokens.json", encryptionKey: nil)
        let error = storeError { try store.update { $0 = TokenStoreFixture.sample } }
        #expect(error?.code == .io)
        #expect(error?.message.contains(fixture.root + "/state/tokenproxy") == true)
        #expect(error?.message.contains(String(cString: strerror(ENOTDIR))) == true)
        #expect(storeError { _ = try store.read() }?.code == .io)
    }

    @Test func directoryAtTheStorePathIsNotAStore() throws {
        let fixture = try TokenStoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.storePath, withIntermediateDirectories: true)
        let error = storeError { _ = try fixture.store().read() }
        #expect(error?.code == .io)
        #expect(error?.message.contains("not a regular file") == true)
        #expect(storeError { try fixture.store().checkPermissions() }?.code == .io)
    }
}
