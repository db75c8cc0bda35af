import Foundation
import Synchronization
import Testing

@testable import TokenProxyCore

/// Runs the built `tokenproxy` binary (next to the test bundle; the README's test command
/// builds it first).
struct CommandLine {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: String {
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return bundle.appendingPathComponent("tokenproxy").path
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Output {
        guard FileManager.default.isExecutableFile(atPath: self.binary) else {
            throw CommandLineError(message: "\(self.binary) is missing: run `swift build` before `swift test`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: self.binary)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read both before waiting, so a full pipe cannot block the child.
        let errorData = Mutex(Data())
        let reader = Thread { errorData.withLock { $0 = stderr.fileHandleForReading.readDataToEndOfFile() } }
        reader.start()
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        _ = eventually { errorData.withLock { $0.isEmpty ? nil : true } }
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: errorData.withLock { $0 }, as: UTF8.self)
        )
    }
}

struct CommandLineError: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}

@Suite struct CommandLineTests {
    private func write(_ json: String, in directory: ScriptDirectory) throws -> String {
        let path = directory.path("proxy.json")
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func tokenPrintsExactlyTheToken() throws {
        let directory = try ScriptDirectory()
        let config = try self.write(
            #"""
            {"token_store": "memory", "providers": {"api": {"grant": "static", "token": {"env": "TP_TEST_TOKEN"}}},
             "routes": []}
            """#,
            in: directory
        )
        let output = try CommandLine.run(["token", "api", "--config", config], environment: ["TP_TEST_TOKEN": "s3cr3t-v4lue"])
        #expect(output.status == 0)
        #expect(output.stdout == "s3cr3t-v4lue\n")
    }

    @Test func tokenFailuresGoToStderrWithExitOne() throws {
        let directory = try ScriptDirectory()
        let config = try self.write(
            #"""
            {"token_store": "memory", "providers": {"app": {"grant": "authorization_code",
              "authorization_url": "https://as.example/authorize", "token_url": "https://as.example/token",
              "client_id": "c"}}, "routes": []}
            """#,
            in: directory
        )
        let output = try CommandLine.run(["token", "app", "--config", config])
        #expect(output.status == 1)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.contains("login_required"))
        #expect(output.stderr.contains("tokenproxy login app"))

        let unknown = try CommandLine.run(["token", "nope", "--config", config])
        #expect(unknown.status == 2)
        #expect(unknown.stdout.isEmpty)
    }
}
