import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file token store: format, encryption, permissions, corrupt files.
@Suite("Token store")
struct TokenStoreTests {
    private static let key = "dGhpcyBpcyBhIHRlc3Qga2V5LCBub3QgYSBzZWNyZXQ="

    @Test func grantsAndPendingRevocationsSurviveANewInstance() throws {
        let fixture = try TokenStoreFixture()
        #expect(try fixture.store().read() == TokenStoreContents())
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        #expect(try fixture.store().read() == TokenStoreFixture.sample)
        let removed = try fixture.store().update { contents in contents.grants.removeValue(forKey: "svc") }
        #expect(removed?.accessToken == "svc_access_SECRET_3")
        var expected = TokenStoreFixture.sample
        expected.grants["svc"] = nil
        #expect(try fixture.store().read() == expected)
    }

    @Test func fileIs0600AndCreatedDirectoriesAre0700() throws {
        let fixture = try TokenStoreFixture()
        let rootMode = fixture.mode(fixture.root)
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        #expect(fixture.mode(fixture.storePath) == 0o600)
        #expect(fixture.mode(fixture.root + "/state") == 0o700)
        #expect(fixture.mode(fixture.storeDirectory) == 0o700)
        #expect(fixture.mode(fixture.storePath + ".lock") == 0o600)
        #expect(fixture.mode(fixture.root) == rootMode)
        #expect(fixture.names() == ["tokens.json", "tokens.json.lock"])
        try fixture.store().checkPermissions()
    }

    @Test func plainFileIsVersionedJSONWithDatesAsSeconds() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        let bytes = try #require(fixture.bytes())
        let object = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        #expect(Set(object.keys) == ["version", "grants", "pending_revocations"])
        #expect(object["version"] as? Int == 1)
        let grants = try #require(object["grants"] as? [String: [String: Any]])
        #expect(grants["github"]?["refresh_token"] as? String == "ghr_refresh_SECRET_2")
        #expect(grants["github"]?["expires_at"] as? Double == 1_900_000_000.25)
        let pending = try #require(object["pending_revocations"] as? [[String: Any]])
        #expect(pending.first?["token_type_hint"] as? String == "refresh_token")
    }

    @Test func encryptedFileHoldsNoTokenInPlaintextAndOpensWithItsKey() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store(key: Self.key).update { $0 = TokenStoreFixture.sample }
        let bytes = try #require(fixture.bytes())
        for secret in TokenStoreFixture.sampleSecrets + ["github", "refresh_token", "auth.example"] {
            #expect(!bytes.containsText(secret), "\(secret) in the encrypted file")
        }
        let object = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        #expect(Set(object.keys) == ["version", "encryption", "sealed"])
        #expect(object["version"] as? Int == 1)
        let encryption = try #require(object["encryption"] as? [String: String])
        #expect(encryption["algorithm"] == "AES-256-GCM")
        #expect(encryption["kdf"] == "HKDF-SHA256")
        #expect(encryption["salt"].flatMap { Data(base64Encoded: $0) }?.count == 16)
        let sealed = try #require((object["sealed"] as? String).flatMap { Data(base64Encoded: $0) })
        #expect(sealed.count > 12 + 16)
        #expect(try fixture.store(key: Self.key).read() == TokenStoreFixture.sample)
        #expect(fixture.mode(fixture.storePath) == 0o600)
    }

    @Test func encryptedFileOpensFromAnotherProcessLikeInstanceAfterManyWrites() throws {
        let fixture = try TokenStoreFixture()
        let writer = fixture.store(key: Self.key)
        for index in 0..<5 {
            try writer.update { $0.grants["p\(index)"] = StoredGrant(accessToken: "token-\(index)") }
        }
        let contents = try fixture.store(key: Self.key).read()
        #expect(contents.grants.count == 5)
        #expect(contents.grants["p4"]?.accessToken == "token-4")
    }

    @Test func wrongKeyIsDecryptionFailedAndTheFileIsLeftAlone() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store(key: Self.key).update { $0 = TokenStoreFixture.sample }
        let before = try #require(fixture.bytes())
        let wrong = fixture.store(key: "c29tZSBvdGhlciBrZXkgZW50aXJlbHksIDMyIGJ5dGVz")
        let readError = storeError { _ = try wrong.read() }
        #expect(readError?.code == .decryptionFailed)
        #expect(readError?.message.contains(fixture.storePath) == true)
        // What commands print and the logs carry: the code word the docs name, then the message.
        #expect(readError?.description.hasPrefix("token store: decryption_failed: \(fixture.storePath)") == true)
        let updateError = storeError { try wrong.update { $0.grants["x"] = StoredGrant(accessToken: "x") } }
        #expect(updateError?.code == .decryptionFailed)
        #expect(fixture.bytes() == before)
        #expect(fixture.asideFiles().isEmpty)
        #expect(try fixture.store(key: Self.key).read() == TokenStoreFixture.sample)
    }

    @Test func alteredCiphertextIsDecryptionFailed() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store(key: Self.key).update { $0 = TokenStoreFixture.sample }
        let bytes = try #require(fixture.bytes())
        var object = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        var sealed = try #require((object["sealed"] as? String).flatMap { Data(base64Encoded: $0) })
        sealed[20] ^= 0x01
        object["sealed"] = sealed.base64EncodedString()
        try fixture.write(JSONSerialization.data(withJSONObject: object))
        let before = fixture.bytes()
        #expect(storeError { _ = try fixture.store(key: Self.key).read() }?.code == .decryptionFailed)
        #expect(fixture.bytes() == before)
    }

    @Test func encryptedFileWithoutAKeyIsEncryptionKeyMissing() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store(key: Self.key).update { $0 = TokenStoreFixture.sample }
        let before = try #require(fixture.bytes())
        let error = storeError { _ = try fixture.store().read() }
        #expect(error?.code == .encryptionKeyMissing)
        #expect(error?.message.contains("token_store.encryption_key") == true)
        #expect(storeError { try fixture.store().update { $0 = TokenStoreContents() } }?.code == .encryptionKeyMissing)
        #expect(fixture.bytes() == before)
        #expect(fixture.asideFiles().isEmpty)
    }

    @Test func unreadableKeyNeverWritesPlaintext() throws {
        let fixture = try TokenStoreFixture()
        let store = FileTokenStore(
            path: fixture.storePath,
            encryptionKey: .environment("TOKENPROXY_TEST_UNSET_\(UUID().uuidString.prefix(8))")
        )
        let error = storeError { try store.update { $0 = TokenStoreFixture.sample } }
        #expect(error?.code == .encryptionKeyMissing)
        #expect(fixture.bytes() == nil)
    }

    @Test func plainFileIsReadWithAKeyAndEncryptedByTheNextWrite() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        let keyed = fixture.store(key: Self.key)
        #expect(try keyed.read() == TokenStoreFixture.sample)
        try keyed.update { $0.grants["new"] = StoredGrant(accessToken: "new_SECRET_5") }
        let bytes = try #require(fixture.bytes())
        for secret in TokenStoreFixture.sampleSecrets + ["new_SECRET_5"] {
            #expect(!bytes.containsText(secret), "\(secret) in the migrated file")
        }
        var expected = TokenStoreFixture.sample
        expected.grants["new"] = StoredGrant(accessToken: "new_SECRET_5")
        #expect(try fixture.store(key: Self.key).read() == expected)
        #expect(storeError { _ = try fixture.store().read() }?.code == .encryptionKeyMissing)
    }

    /// Files that are not a version-1 token store, and the error each gives.
    static let unusableFiles: [(name: String, bytes: String, code: TokenStoreError.Code)] = [
        ("garbage", "\u{01}\u{02}not json at all", .corrupt),
        ("truncated", #"{"version": 1, "grants": {"github": {"access_token": "abc"#, .corrupt),
        ("empty", "", .corrupt),
        ("no version", #"{"grants": {}}"#, .corrupt),
        ("wrong shape", #"{"version": 1, "grants": ["a", "b"]}"#, .corrupt),
        ("bad sealed", #"{"version": 1, "encryption": {"algorithm": "AES-256-GCM"}, "sealed": 5}"#, .corrupt),
        ("future version", #"{"version": 99}"#, .unsupportedVersion),
        (
            "unknown cipher",
            #"{"version": 1, "encryption": {"algorithm": "ROT13", "kdf": "HKDF-SHA256", "salt": ""}, "sealed": ""}"#,
            .unsupportedVersion
        ),
    ]

    @Test(arguments: TokenStoreTests.unusableFiles)
    func unusableFileIsMovedAsideAndReported(name: String, bytes: String, code: TokenStoreError.Code) throws {
        let fixture = try TokenStoreFixture()
        try fixture.write(Data(bytes.utf8))
        let error = storeError { _ = try fixture.store().read() }
        #expect(error?.code == code)
        let aside = try #require(fixture.asideFiles().first)
        #expect(fixture.asideFiles().count == 1)
        #expect(aside.range(of: #"^tokens\.json\.corrupt-[0-9]{8}T[0-9]{6}Z$"#, options: .regularExpression) != nil)
        #expect(error?.message.contains(fixture.storePath) == true)
        #expect(error?.message.contains(fixture.storeDirectory + "/" + aside) == true)
        #expect(fixture.bytes(fixture.storeDirectory + "/" + aside) == Data(bytes.utf8))
        #expect(fixture.bytes() == nil)
        #expect(try fixture.store().read() == TokenStoreContents())
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        #expect(try fixture.store().read() == TokenStoreFixture.sample)
        #expect(fixture.bytes(fixture.storeDirectory + "/" + aside) == Data(bytes.utf8))
    }

    @Test func corruptFileFoundByAnUpdateIsMovedAsideWithoutApplyingIt() throws {
        let fixture = try TokenStoreFixture()
        try fixture.write(Data("first".utf8))
        var applied = false
        #expect(storeError { try fixture.store().update { _ in applied = true } }?.code == .corrupt)
        #expect(!applied)
        try fixture.write(Data("second".utf8))
        #expect(storeError { _ = try fixture.store().read() }?.code == .corrupt)
        // Two files moved aside within one second get distinct names.
        let asides = fixture.asideFiles()
        #expect(asides.count == 2)
        let kept = Set(asides.compactMap { fixture.bytes(fixture.storeDirectory + "/" + $0) })
        #expect(kept == [Data("first".utf8), Data("second".utf8)])
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        #expect(try fixture.store().read() == TokenStoreFixture.sample)
    }

    @Test func unchangedUpdateWritesNothing() throws {
        let fixture = try TokenStoreFixture()
        #expect(try fixture.store().update { $0.grants.count } == 0)
        #expect(fixture.bytes() == nil)
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        let before = try #require(fixture.info())
        let bytes = fixture.bytes()
        let count = try fixture.store().update { contents -> Int in
            contents.grants["github"]?.scope = "repo read:org"
            return contents.grants.count
        }
        #expect(count == 2)
        let after = try #require(fixture.info())
        #expect(after.st_ino == before.st_ino)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec)
        #expect(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(fixture.bytes() == bytes)
        #expect(fixture.temporaryFiles().isEmpty)
    }

    @Test func configurationMakesTheStoreItDescribes() throws {
        #expect(TokenStoreConfiguration.memory.makeStore() is MemoryTokenStore)
        let made = TokenStoreConfiguration.file(path: "/nonexistent/tokens.json", encryptionKey: nil).makeStore()
        let file = try #require(made as? FileTokenStore)
        #expect(file.location == "/nonexistent/tokens.json")
        #expect(try file.read() == TokenStoreContents())
    }
}
