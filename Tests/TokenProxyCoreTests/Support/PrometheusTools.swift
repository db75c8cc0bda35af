import Foundation

/// The Prometheus tools from the Debian package `prometheus` (`promtool`, `prometheus`), which
/// the metrics tests need: a missing tool is a failure that says how to install it, never a
/// silent skip.
enum PrometheusTools {
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    /// The path of `name` on `PATH` (or `/usr/bin`).
    static func require(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        for directory in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        throw Missing(
            description: "\(name) is not installed; the metrics tests need it: apt-get install -y prometheus "
                + "(with /usr/sbin/policy-rc.d answering 101 so that the service is not started)"
        )
    }

    /// Runs `tool` with `input` on standard input; returns its status and its combined output.
    static func run(_ tool: String, _ arguments: [String], input: [UInt8]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let stdin = Pipe()
        let output = Pipe()
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = output
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// A Prometheus server on loopback scraping `/_tokenproxy/metrics` at `target` every second,
    /// with its storage in a temporary directory removed by ``stop()``.
    final class Server {
        private let process = Process()
        private let directory: URL
        private let logFile: URL
        let port: UInt16

        init(target: String) throws {
            let binary = try PrometheusTools.require("prometheus")
            self.directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "tp-prom-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
            self.port = try LoopbackSocket.freePort()
            let config = self.directory.appendingPathComponent("prometheus.yml")
            try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: tokenproxy
                metrics_path: /_tokenproxy/metrics
                static_configs:
                  - targets: ["\(target)"]
            """.write(to: config, atomically: true, encoding: .utf8)
            self.logFile = self.directory.appendingPathComponent("prometheus.log")
            _ = FileManager.default.createFile(atPath: self.logFile.path, contents: nil)
            let log = try FileHandle(forWritingTo: self.logFile)
            self.process.executableURL = URL(fileURLWithPath: binary)
            self.process.arguments = [
                "--config.file=\(config.path)",
                "--storage.tsdb.path=\(self.directory.appendingPathComponent("data").path)",
                "--web.listen-address=127.0.0.1:\(self.port)",
            ]
            self.process.standardOutput = log
            self.process.standardError = log
            try self.process.run()
        }

        /// What the server logged so far.
        var log: String {
            (try? String(contentsOf: self.logFile, encoding: .utf8)) ?? ""
        }

        /// The instant vector `query` evaluates to (`data.result` of `/api/v1/query`).
        func query(_ query: String) throws -> [[String: Any]] {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            let encoded = query.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
            let client = try TestClient(port: self.port)
            try client.send(
                "GET /api/v1/query?query=\(encoded) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            let response = try client.readResponse()
            guard response.status == 200,
                let document = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                let data = document["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
            else { return [] }
            return result
        }

        /// Ends the server and removes its storage.
        func stop() {
            if self.process.isRunning {
                self.process.terminate()
            }
            self.process.waitUntilExit()
            try? FileManager.default.removeItem(at: self.directory)
        }

    }
}
