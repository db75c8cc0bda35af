import Foundation

/// A real Glewlwyd (Debian's `glewlwyd`, an OpenID Connect server written in C) on loopback
/// over TLS, provisioned by `Tests/Interop/glewlwyd/start.py` with a DPoP client that must
/// use nonces, a bearer client and a `tls_client_auth` client (see that folder's README).
/// Stopped when the value goes away.
final class GlewlwydServer {
    /// What `start.py` printed once it was ready.
    let info: [String: Any]
    private let process: Process
    private let input: Pipe
    private let workdir: String

    init(nonceCounter: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/glewlwyd") else {
            throw TestFailure(message: "no /usr/bin/glewlwyd: scripts/install-packages.sh test installs it")
        }
        let workdir = FileManager.default.temporaryDirectory.appendingPathComponent("glewlwyd-\(UUID().uuidString)")
            .path
        self.workdir = workdir
        let script = ProjectPython.packageRoot.appendingPathComponent("Tests/Interop/glewlwyd/start.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [script, "--workdir", workdir] + (nonceCounter.map { ["--dpop-nonce-counter", "\($0)"] } ?? [])
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        self.input = input
        var line = Data()
        let handle = output.fileHandleForReading
        while let byte = try handle.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        guard let info = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
            process.terminate()
            let log = (try? String(contentsOfFile: workdir + "/glewlwyd.log", encoding: .utf8)) ?? ""
            throw TestFailure(
                message: "Glewlwyd did not start: \(String(decoding: line, as: UTF8.self)) \(log.suffix(2000))"
            )
        }
        self.info = info
    }

    deinit {
        // Closing its input stops start.py, which stops Glewlwyd.
        try? self.input.fileHandleForWriting.close()
        self.process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: self.workdir)
    }

    func string(_ key: String) -> String { self.info[key] as? String ?? "" }

    /// A value of one of the provisioned clients (`dpop`, `bearer`, `mtls`).
    func client(_ name: String, _ key: String) -> String {
        ((self.info["clients"] as? [String: Any])?[name] as? [String: Any])?[key] as? String ?? ""
    }

    var user: (name: String, password: String) {
        let user = self.info["user"] as? [String: Any]
        return (user?["username"] as? String ?? "", user?["password"] as? String ?? "")
    }
}
