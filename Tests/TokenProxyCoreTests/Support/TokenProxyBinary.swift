import Foundation
import Synchronization
import TokenProxySupport

/// The built `tokenproxy` binary (next to the test bundle; `swift build` makes it before
/// `swift test`), run as a process: how it ended, an exit status or the signal that stopped
/// it (a trap is SIGILL or SIGTRAP), and what it printed. An optional descriptor limit is
/// applied with `ulimit -n` in a shell that then execs the binary.
enum TokenProxyBinary {
    /// The binary's path.
    static var path: String {
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return bundle.appendingPathComponent("tokenproxy").path
    }

    struct Result {
        var status: Int32
        /// The signal that ended the process, nil when it exited.
        var signal: Int32?
        var stdout: String
        var stderr: String
    }

    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        descriptorLimit: Int? = nil
    ) throws -> Result {
        let binary = Self.path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TestFailure(message: "\(binary) is missing: run `swift build` before `swift test`")
        }
        let process = Process()
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errorData = Mutex(Data())
        let done = DispatchSemaphore(value: 0)
        Thread {
            let data = stderr.fileHandleForReading.readDataToEndOfFile()
            errorData.withLockedValue { $0 = data }
            done.signal()
        }.start()
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        let signaled = process.terminationReason == .uncaughtSignal
        return Result(
            status: signaled ? -1 : process.terminationStatus,
            signal: signaled ? process.terminationStatus : nil,
            stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: errorData.withLockedValue { $0 }, as: UTF8.self)
        )
    }
}

extension TokenProxyBinary {
    /// Runs `serve --config config` with JSON logs, sends `request` once it listens, then
    /// SIGTERM; returns how it ended and the response's status (nil when none came).
    static func serve(config: String, request: String) throws -> (Result, Int?) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.path)
        process.arguments = ["serve", "--config", config, "--log-format", "json", "--listen", "127.0.0.1:0"]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = Mutex("")
        let handle = stderr.fileHandleForReading
        Thread {
            while true {
                let data = handle.availableData
                guard !data.isEmpty else { return }
                text.withLockedValue { $0 += String(decoding: data, as: UTF8.self) }
            }
        }.start()
        let port: UInt16? = eventually {
            guard process.isRunning else { return UInt16(0) }
            return text.withLockedValue { $0 }.split(separator: "\n").lazy.compactMap { line -> UInt16? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["message"] as? String == "listening", let listen = object["server.address"] as? String
                else { return nil }
                return listen.split(separator: ":").last.flatMap { UInt16($0) }
            }.first
        }
        var status: Int?
        if let port, port != 0, let client = try? TestClient(port: port, timeout: 20) {
            try? client.send(request)
            status = (try? client.readResponse())?.status
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let signaled = process.terminationReason == .uncaughtSignal
        let result = Result(
            status: signaled ? -1 : process.terminationStatus,
            signal: signaled && process.terminationStatus != SIGTERM ? process.terminationStatus : nil,
            stdout: "",
            stderr: text.withLockedValue { $0 }
        )
        return (result, status)
    }
}

/// A test's own failure with a message (a missing binary, a system call that failed).
struct TestFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}
