import Foundation

/// Debian's `chromium`, run headless on one page for a bounded time: it loads the page, lets
/// it run until the network is idle (virtual time), prints the DOM and exits; a run that does
/// not end within `limit` seconds is killed.
enum HeadlessChromium {
    /// The browser binary: `$TOKENPROXY_CHROMIUM`, else Debian's wrapper.
    static let path = ProcessInfo.processInfo.environment["TOKENPROXY_CHROMIUM"] ?? "/usr/bin/chromium"

    /// Why a run failed.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Loads `url` and returns the DOM as serialized after the page ran.
    static func dumpDOM(of url: String, limit: Double = 20) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: self.path) else {
            throw Failure(
                description: "chromium is not installed at \(self.path): these tests need a real browser "
                    + "(Debian: apt-get install chromium; or set TOKENPROXY_CHROMIUM)"
            )
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tokenproxy-chromium-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputPath = directory.appendingPathComponent("dom.html").path
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
            let output = FileHandle(forWritingAtPath: outputPath)
        else { throw Failure(description: "cannot create \(outputPath)") }
        defer { try? output.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: self.path)
        process.arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server", "--no-first-run",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update",
            "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
            "--virtual-time-budget=10000", "--dump-dom", url,
        ]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        try process.run()
        if ended.wait(timeout: .now() + limit) == .timedOut {
            process.terminate()
            if ended.wait(timeout: .now() + 3) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                ended.wait()
            }
            throw Failure(description: "chromium did not finish \(url) within \(Int(limit)) s")
        }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "chromium exited with status \(process.terminationStatus)")
        }
        return (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }
}
