import Foundation
import Testing

/// `tokenproxy serve` as a process of its own: its log lines on standard error while it runs
/// and when it exits.
@Suite struct ServeProcessTests {
    /// A running `tokenproxy serve` with JSON logs, and the port it listens on.
    private struct Serving {
        let process: Process
        let errors: ProcessErrorStream
        let port: UInt16
    }

    /// Starts `serve` with one static-token route to `upstream` (plain HTTP, allowed for the
    /// test), the token in `TP_SERVE_TOKEN`, and the environment changed by `environment`.
    private func serve(
        to upstream: FakeUpstream,
        in directory: ScriptDirectory,
        environment: (inout [String: String]) -> Void = { _ in }
    ) throws -> Serving {
        let config = directory.path("proxy.json")
        try """
        {"listen": "127.0.0.1:0", "token_store": "memory",
         "providers": {"api": {"grant": "static", "token": {"env": "TP_SERVE_TOKEN"}}},
         "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:\(upstream.port)", "provider": "api",
                     "allow_insecure_upstream": true}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: TokenProxyBinary.path)
        process.arguments = ["serve", "--config", config, "--log-format", "json"]
        var variables = ProcessInfo.processInfo.environment
        variables["TP_SERVE_TOKEN"] = "serve-s3cret"
        environment(&variables)
        process.environment = variables
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let errors = ProcessErrorStream(stderr)
        let port = eventually {
            (errors.line("listening")?["server.address"] as? String).flatMap { $0.split(separator: ":").last }.flatMap {
                UInt16($0)
            }
        }
        if port == nil {
            process.terminate()
            process.waitUntilExit()
        }
        return Serving(process: process, errors: errors, port: try #require(port, "no listening line: \(errors.raw)"))
    }

    @Test func accessLinesArriveWhileItRunsAndTheLastLinesBeforeItExits() throws {
        let upstream = try FakeUpstream()
        let directory = try ScriptDirectory()
        let serving = try self.serve(to: upstream, in: directory)
        let (process, errors, port) = (serving.process, serving.errors, serving.port)
        defer {
            if process.isRunning {
                process.terminate()
            }
        }

        let client = try TestClient(port: port)
        let response = try client.get("/api/status/204")
        #expect(response.status == 204)
        #expect(upstream.requests.first?.headers.first("Authorization") == "Bearer serve-s3cret")

        // The access line comes while the process goes on serving.
        let access = try #require(eventually { errors.line("request") }, "\(errors.raw)")
        #expect(access["http.response.status_code"] as? Int == 204)
        #expect(access["url.path"] as? String == "/api/status/204")

        // SIGTERM: the line logged on the way out is written before the process ends.
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(eventually { errors.line("shutting down") != nil }, "\(errors.raw)")
        #expect(!errors.raw.contains("serve-s3cret"))
    }

    /// `docs/reference/security.md`: the credential goes to the route's upstream and nowhere else, so
    /// the proxy variables libcurl would otherwise honour (`http_proxy`, `all_proxy`, ...) are
    /// ignored, with nothing in `no_proxy` to exempt the upstream.
    @Test func environmentProxyVariablesAreIgnored() throws {
        let upstream = try FakeUpstream()
        let trap = try FakeUpstream()
        let directory = try ScriptDirectory()
        let trapURL = "http://127.0.0.1:\(trap.port)"
        let serving = try self.serve(to: upstream, in: directory) { variables in
            for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
                variables[name] = trapURL
            }
            variables["no_proxy"] = nil
            variables["NO_PROXY"] = nil
        }
        defer {
            serving.process.terminate()
            serving.process.waitUntilExit()
        }

        let client = try TestClient(port: serving.port)
        let response = try client.get("/api/status/204")
        #expect(response.status == 204)
        #expect(upstream.requests.first?.headers.first("Authorization") == "Bearer serve-s3cret")
        #expect(trap.requests.isEmpty)
    }

    /// Runs `serve --log-format json` with `config` until `stop` says so, and returns its exit
    /// status and standard error.
    private func runJSON(config: String, until stop: (ProcessErrorStream) -> Bool) throws -> (Int32, String) {
        let directory = try ScriptDirectory()
        let path = directory.path("proxy.json")
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let (process, errors) = try ProcessErrorStream.launch(
            TokenProxyBinary.path,
            ["serve", "--config", path, "--log-format", "json"]
        )
        _ = eventually { stop(errors) || !process.isRunning }
        if process.isRunning {
            process.interrupt()
        }
        process.waitUntilExit()
        _ = eventually { errors.raw.hasSuffix("\n") }
        return (process.terminationStatus, errors.raw)
    }

    /// Every line is one JSON object with the documented fields (docs/reference/log-fields.md).
    private func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let fields = try #require(object, "not a JSON object: \(line)")
            #expect(fields["@timestamp"] is String, "\(line)")
            #expect(fields["log.level"] is String, "\(line)")
            #expect(fields["message"] is String, "\(line)")
            return fields
        }
    }

    @Test func startUpWarningsAreJSONLines() throws {
        let (status, text) = try self.runJSON(
            config: """
                {"listen": "127.0.0.1:0", "token_store": "memory",
                 "providers": {"api": {"grant": "static", "token": "literal-s3cret-token"}},
                 "routes": [{"path_prefix": "/api", "upstream": "https://127.0.0.1:1", "provider": "api"}]}
                """,
            until: { $0.line("listening") != nil }
        )
        #expect(status == 0)
        let lines = try self.objects(text)
        let warning = try #require(lines.first { $0["log.level"] as? String == "warning" }, "\(text)")
        #expect((warning["message"] as? String)?.contains("literal secret") == true)
        #expect(lines.contains { $0["message"] as? String == "listening" })
        #expect(!text.contains("literal-s3cret-token"))
    }

    @Test func aRefusedConfigurationIsJSONLines() throws {
        let (status, text) = try self.runJSON(
            config: """
                {"listen": "127.0.0.1:0", "token_store": "memory", "lisen": "typo",
                 "providers": {"api": {"grant": "static", "token": "literal-s3cret-token"}},
                 "routes": [{"path_prefix": "/api", "upstream": "https://127.0.0.1:1", "provider": "nope"}]}
                """,
            until: { _ in false }
        )
        #expect(status == 2)
        let lines = try self.objects(text)
        #expect(lines.contains { $0["log.level"] as? String == "critical" }, "\(text)")
        #expect(lines.filter { $0["log.level"] as? String == "error" }.count >= 2, "\(text)")
        #expect(!text.contains("literal-s3cret-token"))
    }
}
