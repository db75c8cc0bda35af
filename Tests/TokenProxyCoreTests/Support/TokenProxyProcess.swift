import Foundation

/// `tokenproxy serve` (the built binary) running as a child process with a configuration
/// file, for what only a process of its own shows: its open descriptors in
/// `/proc/PID/fd`, which other tests running in this process would disturb. Terminated on
/// deinit.
final class TokenProxyProcess {
    /// The running `serve`.
    let process: Process
    /// Its JSON log lines.
    let output: ProcessErrorStream
    /// The loopback port it listens on.
    let port: UInt16
    private let directory: ScriptDirectory
    /// The configuration file it was started with.
    var configurationPath: String { self.directory.path("proxy.json") }

    /// Writes `configuration` to a file, starts `serve` with it on an ephemeral loopback port
    /// and waits for its `listening` log line.
    init(configuration: String) throws {
        self.directory = try ScriptDirectory()
        let path = self.directory.path("proxy.json")
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        let (process, output) = try ProcessErrorStream.launch(
            TokenProxyBinary.path,
            ["serve", "--config", path, "--log-format", "json", "--listen", "127.0.0.1:0"]
        )
        let port = eventually { output.listeningPort }
        guard let port else {
            process.terminate()
            process.waitUntilExit()
            throw TestFailure(message: "serve did not listen: \(output.raw.suffix(2000))")
        }
        self.process = process
        self.output = output
        self.port = port
    }

    /// Writes `configuration` over the file and sends SIGHUP; returns once the process logged
    /// the reload (false when it did not within the wait).
    func reload(_ configuration: String) throws -> Bool {
        let before = self.output.count("configuration reloaded")
        try configuration.write(toFile: self.configurationPath, atomically: true, encoding: .utf8)
        kill(self.process.processIdentifier, SIGHUP)
        return eventually { self.output.count("configuration reloaded") > before }
    }

    /// How many descriptors the process has open now.
    var descriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(self.process.processIdentifier)/fd").count) ?? -1
    }

    /// The descriptor count once it holds still: the same in two readings in a row, so the
    /// connections a test just closed have been closed by the proxy too.
    func settledDescriptors() -> Int? {
        var last = self.descriptors
        return eventually { () -> Int? in
            let now = self.descriptors
            defer { last = now }
            return now == last ? now : nil
        }
    }

    /// Whether `healthz` answers 200 on a new connection.
    var isHealthy: Bool {
        (try? TestClient.outcome(port: self.port, target: "/_tokenproxy/healthz", timeout: 5)) == .answered(200)
    }

    deinit {
        if self.process.isRunning {
            self.process.terminate()
            self.process.waitUntilExit()
        }
    }
}
