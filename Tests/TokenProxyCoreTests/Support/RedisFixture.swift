import Foundation

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A real `redis-server` from Debian on a free loopback port and a Unix socket in a
/// temporary directory, with nothing saved to disk: stopping it loses everything, as a
/// restarted cache does. Stopped on deinit; ``stop()`` and ``start()`` kill and restart it on
/// the same port and socket.
final class RedisFixture: @unchecked Sendable {
    let directory: URL
    let port: UInt16
    /// The `requirepass` password, if any.
    let password: String?
    private let lock = NSLock()
    /// The running server, if any (guarded by `lock`).
    private var process: Process?

    var socketPath: String { self.directory.appendingPathComponent("redis.sock").path }
    var url: String { "redis://127.0.0.1:\(self.port)" }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts a server, with `requirepass` when `password` is given.
    init(password: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw Failure(description: "redis-server is not installed (scripts/install-packages.sh test installs it)")
        }
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        self.port = try LoopbackSocket.freePort()
        self.password = password
        try self.start()
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// Starts the server (again) and waits until it answers `PING`.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        var arguments = [
            "--port", String(self.port), "--bind", "127.0.0.1", "--unixsocket", self.socketPath,
            "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", self.directory.path,
            "--protected-mode", "no",
        ]
        if let password { arguments += ["--requirepass", password] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.lock.withLock { self.process = process }
        guard eventually({ (try? self.cli(["PING"])) == "PONG" }) else {
            self.stop()
            throw Failure(description: "redis-server did not answer on port \(self.port)")
        }
    }

    /// Kills the server (SIGKILL: no goodbye to its clients) and waits until it is gone.
    func stop() {
        guard let process = self.lock.withLock({ self.process.take() }) else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    /// Runs `redis-cli` with `arguments` against the server; its output, trimmed.
    @discardableResult
    func cli(_ arguments: [String]) throws -> String {
        var argv = ["redis-cli", "-h", "127.0.0.1", "-p", String(self.port), "--no-auth-warning"]
        if let password { argv += ["-a", password] }
        let output = try CommandRunner.run(argv + arguments, timeout: 20)
        guard output.status == 0 else { throw Failure(description: "redis-cli \(arguments): \(output.stderr)") }
        return String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every key and, for each, every value it holds (strings, and hash fields and values).
    func everything() throws -> [String: [String]] {
        var all: [String: [String]] = [:]
        for key in try self.cli(["--raw", "KEYS", "*"]).split(separator: "\n").map(String.init) where !key.isEmpty {
            switch try self.cli(["TYPE", key]) {
            case "hash":
                all[key] = try self.cli(["--raw", "HGETALL", key]).split(separator: "\n").map(String.init)
            default:
                all[key] = [try self.cli(["--raw", "GET", key])]
            }
        }
        return all
    }

    /// A store configuration for this server.
    func configuration(
        key: String = "k3y-for-the-redis-tests",
        prefix: String = "tokenproxy:",
        overUnixSocket: Bool = false
    ) -> RedisStoreConfiguration {
        RedisStoreConfiguration(
            address: overUnixSocket ? .unix(path: self.socketPath) : .tcp(host: "127.0.0.1", port: Int(self.port)),
            password: self.password.map(Secret.literal),
            encryptionKey: .literal(key),
            keyPrefix: prefix
        )
    }
}
