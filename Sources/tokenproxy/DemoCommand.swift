import ArgumentParser
import Dispatch
import Foundation
import Logging
import TokenProxyApp
import TokenProxyConfiguration

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenproxy demo`: a self-contained run with a built-in authorization server and upstream.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a built-in authorization server and upstream with the proxy in front, and show what to try."
    )

    /// Accepted as every command accepts it, and hidden from the help: the demo builds its
    /// own configuration and reads no file.
    @Option(name: .long, help: ArgumentHelp(visibility: .hidden))
    var config: String?

    @Option(help: "Where the proxy listens (loopback only).")
    var listen: String = "127.0.0.1:8080"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func run() throws {
        LogSetup.bootstrap(format: .text, level: self.logLevel)
        let logger = Logger(label: "tokenproxy.demo")
        let address: ListenAddress
        do {
            address = try ListenAddress(parsing: self.listen)
        } catch {
            Console.error("--listen: \(error)")
            throw ExitStatus.configError
        }
        guard address.isLoopback else {
            Console.error("--listen: the demo listens on loopback addresses only")
            throw ExitStatus.configError
        }
        signal(SIGPIPE, SIG_IGN)
        let demo: DemoEnvironment
        do {
            demo = try DemoEnvironment.start(listen: address, logger: logger)
        } catch {
            Console.error("cannot start the demo on \(self.listen): \(error) (try --listen 127.0.0.1:0)")
            throw ExitStatus.runtimeFailure
        }
        FileHandle.standardOutput.write(Data((demo.instructions + "\n").utf8))
        let queue = DispatchQueue(label: "tokenproxy.demo.signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                demo.stop { Glibc.exit(0) }
            }
            source.resume()
            sources.append(source)
        }
        withExtendedLifetime(sources) {
            dispatchMain()
        }
    }
}
