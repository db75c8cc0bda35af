import Foundation
import Testing

/// SIGTERM reaches `serve` whenever it comes: the proxy blocks its handled signals in every
/// thread, so no thread of its own can take one (and, with the signal ignored, lose it)
/// before libdispatch's signal source reads it.
struct SignalDeliveryTests {
    @Test func aSIGTERMRightAfterStartUpStopsTheProxy() throws {
        let directory = try ScriptDirectory()
        let path = directory.path("proxy.json")
        try """
        {"listen": "127.0.0.1:0", "token_store": "memory", "providers": {},
         "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:9"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        for round in 0..<20 {
            let (process, output) = try ProcessErrorStream.launch(
                TokenProxyBinary.path,
                ["serve", "--config", path, "--log-format", "json"]
            )
            #expect(eventually { output.line("listening") != nil || !process.isRunning })
            process.terminate()
            let stopped = eventually { !process.isRunning }
            #expect(stopped, "round \(round): SIGTERM was lost")
            if !stopped {
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
            #expect(process.terminationReason == .exit, "round \(round)")
            #expect(process.terminationStatus == 0, "round \(round)")
        }
    }
}
