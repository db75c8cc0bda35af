import Foundation

/// A Python server of `Tests/Interop/` started from the project's virtual environment on a
/// free loopback port for one test; its first line on standard output is `READY <port>`.
final class InteropServer {
    let port: UInt16
    private let process: Process

    /// Starts `Tests/Interop/<script>` with `arguments`.
    init(script: String, arguments: [String] = []) throws {
        let path = ProjectPython.packageRoot.appendingPathComponent("Tests/Interop/\(script)").path
        guard FileManager.default.isExecutableFile(atPath: ProjectPython.executable) else {
            throw TestFailure(message: "no \(ProjectPython.executable): run scripts/test.sh, which makes it")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProjectPython.executable)
        process.arguments = [path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let handle = output.fileHandleForReading
        var line = Data()
        while let byte = try handle.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("READY "), let port = UInt16(text.dropFirst(6)) else {
            process.terminate()
            throw TestFailure(
                message: "\(script) did not start (scripts/test.sh installs Tests/Interop/requirements.txt): \(text)"
            )
        }
        self.port = port
    }

    deinit {
        // SIGKILL: a signal disposition inherited from the test runner may make the server
        // ignore SIGTERM.
        kill(self.process.processIdentifier, SIGKILL)
        self.process.waitUntilExit()
    }

    /// `http://127.0.0.1:<port>`.
    var origin: String { "http://127.0.0.1:\(self.port)" }
}
