import Foundation
import Testing

@testable import TokenProxyConfiguration

#if canImport(Glibc)
    import Glibc
#endif

/// A secret volume laid out as the kubelet lays it out: the files in a timestamped
/// directory, `..data` a symbolic link to it, and each name a link through `..data`. An
/// update writes a new timestamped directory and swaps `..data` by renaming a new link over
/// it, so a reader sees the old files or the new ones, never a mix. The volume's own
/// directory is writable by everyone with the sticky bit, as the tmpfs root of a projected
/// service-account volume is; its links are root's, so they are followed.
private final class KubeletSecretVolume {
    let path: String
    private var generation = 0

    /// The uid the volume's files belong to: another user than the test's own.
    static let owner: uid_t = 65534

    init(files: [String: String], mode: Int) throws {
        let directory = try ConfigurationTemporaryDirectory()
        self.path = directory.path + "/volume"
        self.directory = directory
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: false)
        guard chmod(self.path, 0o1777) == 0 else {
            throw TestFailure(message: "chmod \(self.path): \(String(cString: strerror(errno)))")
        }
        try self.update(files: files, mode: mode)
        for name in files.keys {
            try FileManager.default.createSymbolicLink(
                atPath: self.path + "/" + name,
                withDestinationPath: "..data/" + name
            )
        }
    }

    /// Holds the temporary directory (removed when the volume goes).
    private let directory: ConfigurationTemporaryDirectory

    /// Writes a new generation of the files, then swaps `..data` to it atomically.
    func update(files: [String: String], mode: Int) throws {
        self.generation += 1
        let name = "..2026_11_23_12_00_0\(self.generation).000000001"
        let directory = self.path + "/" + name
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        for (file, text) in files {
            let path = directory + "/" + file
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            guard chown(path, Self.owner, Self.owner) == 0 else {
                throw TestFailure(message: "chown \(path): the mounted-secret tests need root, as CI runs them")
            }
        }
        let temporary = self.path + "/..data_tmp"
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: name)
        guard rename(temporary, self.path + "/..data") == 0 else {
            throw TestFailure(message: "rename ..data_tmp: \(String(cString: strerror(errno)))")
        }
    }
}

@Suite struct MountedSecretTests {
    private func configuration(token file: String) throws -> ProxyConfiguration {
        try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(providers: #"{"p": {"grant": "static", "token": {"file": "\#(file)"}}}"#)
        )
    }

    @Test func aKubernetesSecretOfAnotherUserIsUsedAndNamedByCheck() throws {
        let volume = try KubeletSecretVolume(files: ["token": "first-mounted-value\n"], mode: 0o644)
        let configuration = try self.configuration(token: volume.path + "/token")
        #expect(configuration.secretPermissionProblems().isEmpty)
        let notes = configuration.sharedSecretFiles()
        #expect(notes.map(\.path) == ["providers.p.token"])
        #expect(notes.first?.message.contains("uid 65534") == true)
        #expect(notes.first?.message.contains("0644") == true)
        #expect(!notes.map(\.description).joined().contains("first-mounted-value"))
        #expect(try configuration.providers["p"]?.token?.resolve() == "first-mounted-value")
    }

    @Test func aRotatedKubernetesSecretIsUsedWithoutARestart() throws {
        let volume = try KubeletSecretVolume(files: ["token": "before-rotation"], mode: 0o644)
        let configuration = try self.configuration(token: volume.path + "/token")
        let secret = try #require(configuration.providers["p"]?.token)
        #expect(try secret.resolve() == "before-rotation")
        try volume.update(files: ["token": "after-rotation"], mode: 0o644)
        #expect(try secret.resolve() == "after-rotation")
    }

    @Test func aKubernetesSecretIsReadAfterEachSwapAndRefusedWhenALinkIsAnotherUsers() throws {
        let volume = try KubeletSecretVolume(files: ["token": "generation-one"], mode: 0o644)
        let secret = Secret.file(volume.path + "/token")
        for generation in ["generation-two", "generation-three"] {
            try volume.update(files: ["token": generation], mode: 0o644)
            #expect(try secret.resolve() == generation)
        }
        // Another user swaps `..data` in the shared volume directory: the link is not followed.
        let planted = volume.path + "/..planted"
        try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: "/etc")
        guard lchown(planted, KubeletSecretVolume.owner, KubeletSecretVolume.owner) == 0 else {
            throw TestFailure(message: "lchown \(planted): the mounted-secret tests need root, as CI runs them")
        }
        #expect(rename(planted, volume.path + "/..data") == 0)
        #expect {
            try secret.resolve()
        } throws: { error in
            "\(error)".contains("\(volume.path)/..data belongs to uid 65534 in the shared directory")
        }
    }

    @Test func aDockerSecretOfAnotherUserIsUsed() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("db_token", "docker-secret-value", mode: 0o444)
        guard chown(path, KubeletSecretVolume.owner, KubeletSecretVolume.owner) == 0 else {
            throw TestFailure(message: "chown \(path): the mounted-secret tests need root, as CI runs them")
        }
        let configuration = try self.configuration(token: path)
        #expect(configuration.secretPermissionProblems().isEmpty)
        #expect(configuration.sharedSecretFiles().map(\.path) == ["providers.p.token"])
    }

    @Test func aSecretFileWritableByOthersIsAlwaysRefused() throws {
        let volume = try KubeletSecretVolume(files: ["token": "anyone-could-write-this"], mode: 0o666)
        let configuration = try self.configuration(token: volume.path + "/token")
        let refused = configuration.secretPermissionProblems()
        #expect(refused.map(\.path) == ["providers.p.token"])
        #expect(refused.first?.message.contains("writable by others") == true)
        #expect(refused.first?.message.contains("chmod o-w") == true)
        #expect(configuration.sharedSecretFiles().isEmpty)
    }

    @Test func aSecretFileOfOurOwnOpenToOthersIsStillRefused() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("token", "own-file-value", mode: 0o640)
        let configuration = try self.configuration(token: path)
        #expect(configuration.secretPermissionProblems().first?.message.contains("chmod 600 \(path)") == true)
        #expect(configuration.sharedSecretFiles().isEmpty)
    }

    @Test func checkNamesAMountedSecretAndServesItsRouteTable() throws {
        let volume = try KubeletSecretVolume(files: ["token": "check-mounted-value"], mode: 0o644)
        let directory = try ConfigurationTemporaryDirectory()
        let config = try directory.write(
            "proxy.json",
            #"""
            {"token_store": "memory",
             "providers": {"p": {"grant": "static", "token": {"file": "\#(volume.path)/token"}}},
             "routes": [{"path_prefix": "/p", "upstream": "https://api.example", "provider": "p"}]}
            """#
        )
        let output = try TokenProxyBinary.run(["check", "--config", config])
        #expect(output.status == 0)
        #expect(output.stderr.contains("note: providers.p.token:"))
        #expect(output.stderr.contains("used as a secret mounted by the platform"))
        #expect(output.stdout.contains("/p"))
        #expect(!(output.stdout + output.stderr).contains("check-mounted-value"))
    }
}
