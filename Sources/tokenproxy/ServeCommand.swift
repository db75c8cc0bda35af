import ArgumentParser
import Dispatch
import Logging
import TokenProxyApp
import TokenProxyConfiguration
import TokenProxyForwarding
import TokenProxyMetrics
import TokenProxySupport
import TokenProxyUpstream

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenproxy serve`: runs the proxy until SIGTERM or SIGINT.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the proxy."
    )

    @OptionGroup var options: ConfigOption

    @Option(help: "Listen address, overriding the config: host:port, [v6]:port or unix:/path.")
    var listen: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log format: text or json.")
    var logFormat: LineLogHandler.Format = .text

    func run() throws {
        // Before any thread exists, so that every thread inherits it.
        SignalHandling.blockHandledSignals()
        LogSetup.bootstrap(format: self.logFormat, level: self.logLevel)
        let logger = Logger(label: "tokenproxy")
        Console.useLogger(self.logFormat == .json ? logger : nil)

        let configuration = try ConfigLoader.load(self.options.path, listen: self.listen, printWarnings: true)
        // Made first, so that the token store counts its failures in them too.
        let metrics = ProxyMetrics()
        let store = try ConfigLoader.openStore(configuration, metrics: metrics)

        // Writes to a closed client socket must fail with EPIPE, never kill the process.
        signal(SIGPIPE, SIG_IGN)
        let descriptors = DescriptorLimit.raiseSoftLimit()
        logger.info("descriptor limit", metadata: ["soft": "\(descriptors.soft)", "hard": "\(descriptors.hard)"])
        guard descriptors.soft >= DescriptorLimit.minimumToServe else {
            logger.critical(
                "the descriptor limit is too low to serve",
                metadata: ["soft": "\(descriptors.soft)", "minimum": "\(DescriptorLimit.minimumToServe)"]
            )
            throw ExitStatus.runtimeFailure
        }
        // One engine per processor by default; `TOKENPROXY_CURL_ENGINES` sets the count
        // (1 to 64; docs/reference/environment.md).
        let engineCount =
            ProcessEnvironment.variables["TOKENPROXY_CURL_ENGINES"].flatMap { Int($0) } ?? CurlEngine.defaultCount
        let service: ProxyService
        do {
            service = try ProxyService(
                configuration: configuration,
                store: store,
                engineCount: engineCount,
                metrics: metrics,
                logger: logger
            )
        } catch {
            logger.critical("cannot start the upstream engine", metadata: ["error": "\(error)"])
            throw ExitStatus.runtimeFailure
        }
        let bound: ProxyService.BoundAddresses
        do {
            bound = try service.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitStatus.runtimeFailure
        }
        SignalHandling.install(
            service: service,
            configPath: self.options.path,
            listenOverride: self.listen,
            logger: logger
        )
        // Only now: a signal sent by whoever waits for this line reaches the sources.
        logger.info(
            "listening",
            metadata: [
                "listen": "\(bound.proxy)", "routes": "\(configuration.routes.count)",
                "admin": "\(bound.admin.map { "\($0)" } ?? "\(configuration.admin)")",
            ]
        )
        dispatchMain()
    }
}

/// SIGTERM/SIGINT drain and exit; SIGHUP reloads the config (`docs/reference/cli.md`, "Signals").
enum SignalHandling {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    /// The signals the sources below handle.
    private static let handled = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the handled signals in the calling thread, and so in every thread it starts.
    /// libdispatch reads them through a signalfd, which sees a signal only while no thread
    /// takes it: a thread that left one unblocked could take it first, and with the signal
    /// ignored, a SIGTERM would be lost and the proxy never stop. Blocked everywhere, a signal
    /// that arrives before the sources exist also waits for them.
    static func blockHandledSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for number in Self.handled {
            sigaddset(&set, number)
        }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    static func install(service: ProxyService, configPath: String, listenOverride: String?, logger: Logger) {
        let queue = DispatchQueue(label: "tokenproxy.signals")
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                logger.info("shutting down", metadata: ["signal": "\(number)", "open": "\(service.openConnections)"])
                service.drain(timeout: service.configuration.limits.drainTimeoutSeconds) { clean in
                    if !clean {
                        logger.warning("drain timeout passed; exiting with connections still open")
                    }
                    exit(0)
                }
            }
            source.resume()
            self.sources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        reload.setEventHandler {
            do {
                var configuration = try ProxyConfiguration.load(path: configPath)
                if listenOverride != nil {
                    configuration.listen = service.configuration.listen
                }
                let refused = configuration.secretPermissionProblems()
                guard refused.isEmpty else {
                    throw ConfigurationError(problems: refused)
                }
                service.reload(configuration)
                logger.info("configuration reloaded", metadata: ["routes": "\(configuration.routes.count)"])
            } catch {
                logger.error(
                    "configuration reload failed; keeping the previous configuration",
                    metadata: ["problems": "\(error)"]
                )
            }
        }
        reload.resume()
        self.sources.append(reload)
        self.awaitRegistration()
    }

    /// Waits (2 s at most) until libdispatch has taken over the handled signals, which it
    /// does on its own thread after `resume()`: it then installs a handler of its own in
    /// place of `SIG_IGN`. Until then a signal the main thread takes (`dispatchMain` leaves
    /// them unblocked there) would be ignored and lost.
    private static func awaitRegistration() {
        let deadline = ContinuousClock.now + .seconds(2)
        // Handlers are C function pointers, compared by address.
        let ignored = unsafeBitCast(SIG_IGN, to: Int.self)
        for number in Self.handled {
            var action = sigaction()
            while sigaction(number, nil, &action) == 0,
                unsafeBitCast(action.__sigaction_handler, to: Int.self) == ignored,
                ContinuousClock.now < deadline
            {
                usleep(1_000)
            }
        }
    }
}

/// The `--log-format` values.
extension LineLogHandler.Format: ExpressibleByArgument {}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Installs the chosen log handler once, before any logger is made. Lines go to standard
/// error through a ``LogWriter``, so a reader that stops taking them never stalls the proxy;
/// what is still queued when the process exits is written first (for at most 2 s).
enum LogSetup {
    static func bootstrap(format: LineLogHandler.Format, level: Logger.Level) {
        let writer = LogWriter.standardError
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler(label: label, format: format, writer: writer)
            handler.logLevel = level
            return handler
        }
        writer.reportDrops { count in
            Logger(label: "tokenproxy").warning(
                "log lines dropped: standard error was not taking them",
                metadata: ["dropped": "\(count)"]
            )
        }
        atexit {
            LogWriter.standardError.flush(timeout: .seconds(2))
        }
    }
}
