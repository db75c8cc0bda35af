import Foundation
import Synchronization
import TokenProxySupport

/// Standard error of a running process, collected on a thread as it arrives, read as JSON
/// log lines (`serve --log-format json`).
final class ProcessErrorStream: Sendable {
    private let text = Mutex("")

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread { [self] in
            while true {
                let data = handle.availableData
                guard !data.isEmpty else { return }
                self.text.withLockedValue { $0 += String(decoding: data, as: UTF8.self) }
            }
        }.start()
    }

    /// The JSON log lines so far.
    var lines: [[String: Any]] {
        self.text.withLockedValue { $0 }.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The JSON log lines so far, every value as text.
    var textLines: [[String: String]] {
        self.lines.map { $0.mapValues { "\($0)" } }
    }

    /// The first line whose message is `message`.
    func line(_ message: String) -> [String: Any]? {
        self.lines.first { $0["message"] as? String == message }
    }

    /// How many lines have the message `message`.
    func count(_ message: String) -> Int {
        self.lines.filter { $0["message"] as? String == message }.count
    }

    /// Everything received so far.
    var raw: String { self.text.withLockedValue { $0 } }

    /// The port of the `listening` line's `server.address`, once it was logged.
    var listeningPort: UInt16? {
        self.textLines.first { $0["message"] == "listening" }?["server.address"]
            .flatMap { $0.split(separator: ":").last }.flatMap { UInt16($0) }
    }

    /// Starts `executable` with `arguments`, standard output and input closed, and collects
    /// its standard error.
    static func launch(_ executable: String, _ arguments: [String]) throws -> (Process, ProcessErrorStream) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, ProcessErrorStream(stderr))
    }
}
