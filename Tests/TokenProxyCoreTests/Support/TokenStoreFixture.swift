import Foundation

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private temporary directory for token store tests, removed when the value goes away.
/// The store itself goes two levels down, in directories the store has to create.
final class TokenStoreFixture {
    /// The temporary directory.
    let root: String
    /// `ROOT/state/tokenproxy/tokens.json`.
    let storePath: String
    /// `ROOT/state/tokenproxy`.
    var storeDirectory: String { self.root + "/state/tokenproxy" }

    /// Creates a fresh, empty directory.
    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tpstore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        self.root = url.path
        self.storePath = url.path + "/state/tokenproxy/tokens.json"
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.root)
    }

    /// A store on ``storePath``.
    func store(
        key: String? = nil,
        faults: (@Sendable (FileTokenStore.SaveStep) throws(TokenStoreError) -> Void)? = nil
    ) -> FileTokenStore {
        FileTokenStore(path: self.storePath, encryptionKey: key.map { Secret.literal($0) }, faults: faults)
    }

    /// The bytes at `path` (the store file by default), nil when there is no file.
    func bytes(_ path: String? = nil) -> Data? {
        FileManager.default.contents(atPath: path ?? self.storePath)
    }

    /// The bytes at `path` as text.
    func text(_ path: String? = nil) -> String {
        self.bytes(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Writes `data` at `path` (the store file by default) with exactly `mode`, creating the
    /// store's directories 0700 first.
    func write(_ data: Data, to path: String? = nil, mode: mode_t = 0o600) throws {
        try FileManager.default.createDirectory(
            atPath: self.storeDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let path = path ?? self.storePath
        _ = FileManager.default.createFile(atPath: path, contents: data)
        chmod(path, mode)
    }

    /// `stat` of `path` (the store file by default), not following a symbolic link.
    func info(_ path: String? = nil) -> stat? {
        var info = stat()
        guard lstat(path ?? self.storePath, &info) == 0 else { return nil }
        return info
    }

    /// The permission bits of `path`.
    func mode(_ path: String) -> mode_t? {
        self.info(path).map { $0.st_mode & 0o7777 }
    }

    /// The names in the store's directory, sorted.
    func names() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: self.storeDirectory)) ?? []).sorted()
    }

    /// Temporary files a save left behind in the store's directory.
    func temporaryFiles() -> [String] {
        self.names().filter { $0.hasPrefix(".tokens.json.tmp-") }
    }

    /// Files the store moved aside.
    func asideFiles() -> [String] {
        self.names().filter { $0.hasPrefix("tokens.json.corrupt-") }
    }

    /// Contents with every field and a pending revocation; every secret contains `SECRET`.
    static let sample = TokenStoreContents(
        grants: [
            "github": StoredGrant(
                accessToken: "gho_access_SECRET_1",
                tokenType: "Bearer",
                expiresAt: Date(timeIntervalSince1970: 1_900_000_000.25),
                refreshToken: "ghr_refresh_SECRET_2",
                scope: "repo read:org",
                obtainedAt: Date(timeIntervalSince1970: 1_899_996_400),
                configFingerprint: String(repeating: "ab", count: 32),
                needsLogin: true,
                lastError: "invalid_grant: expired",
                lastErrorAt: Date(timeIntervalSince1970: 1_899_990_000.5)
            ),
            "svc": StoredGrant(accessToken: "svc_access_SECRET_3"),
        ],
        pendingRevocations: [
            PendingRevocation(
                provider: "old",
                token: "revoke_me_SECRET_4",
                tokenTypeHint: "refresh_token",
                revocationURL: "https://auth.example/revoke",
                since: Date(timeIntervalSince1970: 1_800_000_000)
            )
        ]
    )

    /// The secret values in ``sample``.
    static let sampleSecrets = [
        "gho_access_SECRET_1", "ghr_refresh_SECRET_2", "svc_access_SECRET_3", "revoke_me_SECRET_4",
    ]
}

/// The ``TokenStoreError`` `body` throws, nil when it returns (any other error is nil too,
/// so the expectation on it fails).
func storeError(_ body: () throws -> Void) -> TokenStoreError? {
    do {
        try body()
        return nil
    } catch {
        return error as? TokenStoreError
    }
}

extension Data {
    /// Whether `text`'s UTF-8 bytes occur anywhere in the data.
    func containsText(_ text: String) -> Bool {
        self.range(of: Data(text.utf8)) != nil
    }
}
