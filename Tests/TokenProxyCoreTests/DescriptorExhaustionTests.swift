import Foundation
import Testing

@testable import TokenProxySupport

/// `tokenproxy serve` started under a low `RLIMIT_NOFILE` (`docs/reference/http-behaviour.md`,
/// "Descriptors").
@Suite struct DescriptorExhaustionTests {
    /// Starts `serve` through `prlimit --nofile=soft:hard`, routing `/api` to `upstream`.
    private func launch(
        upstream: String,
        in directory: ScriptDirectory,
        soft: Int,
        hard: Int
    ) throws -> (Process, ProcessErrorStream) {
        let config = directory.path("proxy.json")
        try """
        {"listen": "127.0.0.1:0", "token_store": "memory", "providers": {},
         "routes": [{"path_prefix": "/api", "upstream": "\(upstream)"}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        return try ProcessErrorStream.launch(
            "/usr/bin/prlimit",
            ["--nofile=\(soft):\(hard)", TokenProxyBinary.path, "serve", "--config", config, "--log-format", "json"]
        )
    }

    /// ``launch(upstream:in:soft:hard:)`` to `upstream`, then its listening port.
    private func serve(
        to upstream: FakeUpstream,
        in directory: ScriptDirectory,
        soft: Int,
        hard: Int
    ) throws -> (Process, ProcessErrorStream, UInt16) {
        let (process, output) = try self.launch(
            upstream: "http://127.0.0.1:\(upstream.port)",
            in: directory,
            soft: soft,
            hard: hard
        )
        let port = eventually { output.listeningPort }
        guard let port else {
            process.terminate()
            process.waitUntilExit()
            throw TestClient.Failure(description: "no listening line: \(output.raw)")
        }
        return (process, output, port)
    }

    /// Below the minimum, `serve` says so and exits 1 instead of starting engines and
    /// listeners that libdispatch or libcurl cannot support (a SIGILL at 12 and 16).
    @Test(arguments: [4, 12, 16, 31])
    func aLimitTooLowToServeIsRefusedWithAReason(limit: Int) throws {
        let directory = try ScriptDirectory()
        let (process, output) = try self.launch(
            upstream: "http://127.0.0.1:9",
            in: directory,
            soft: limit,
            hard: limit
        )
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 1)
        let refusal = eventually { output.textLines.first { $0["log.level"] == "critical" } }
        #expect(refusal?["message"] == "the descriptor limit is too low to serve", "\(output.raw)")
        #expect(refusal?["tokenproxy.minimum"] == "\(DescriptorLimit.minimumToServe)")
    }

    @Test func moreConnectionsThanDescriptorsLeaveTheProxyServing() throws {
        let upstream = try FakeUpstream()
        let directory = try ScriptDirectory()
        let (process, output, port) = try self.serve(to: upstream, in: directory, soft: 40, hard: 40)
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }

        // Five times the descriptors the proxy has, all at once, each with a request.
        var flood: [TestClient] = []
        for _ in 0..<200 {
            let client = try TestClient(port: port, timeout: 2)
            try client.send("GET /api/status/200 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            flood.append(client)
        }
        var answered = 0
        for client in flood {
            if let response = try? client.readResponse(), [200, 503].contains(response.status) {
                answered += 1
            }
        }
        #expect(answered > 0)
        #expect(process.isRunning, "\(output.raw)")
        flood.removeAll()

        // Descriptors come back: a normal request is served again.
        let served = eventually { () -> Bool in
            guard let client = try? TestClient(port: port, timeout: 2),
                let response = try? client.get("/api/status/200")
            else { return false }
            return response.status == 200
        }
        #expect(served, "\(output.raw.suffix(2000))")
        #expect(process.isRunning)
        // Accepting paused a few times, each for a while: not once per pending connection.
        let pauses = output.count("accept paused")
        #expect(pauses >= 1)
        #expect(pauses < 40, "\(pauses) pauses")
    }

    @Test func serveRaisesTheSoftLimitToTheHardOne() throws {
        let upstream = try FakeUpstream()
        let directory = try ScriptDirectory()
        let (process, output, _) = try self.serve(to: upstream, in: directory, soft: 64, hard: 512)
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let limits = try String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let figures = line.split(separator: " ").compactMap { Int($0) }
        #expect(figures == [512, 512])
        let logged = try #require(output.textLines.first { $0["message"] == "descriptor limit" })
        #expect(logged["tokenproxy.soft"] == "512")
        #expect(logged["tokenproxy.hard"] == "512")
    }
}
