import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics
import TokenProxySupport

/// The connections of one ``RedisTokenStore`` to its server, and what it knows of the
/// server's health.
///
/// Every command is bounded by the connect and command timeouts, so a server that stops
/// answering costs one timeout, never a blocked thread. After a failure the server is left
/// alone for a backoff (0.25 s doubling to 5 s): commands meanwhile fail at once, and the
/// store serves from its own memory. The first failure is logged as a warning and the
/// recovery as a notice; every failure is counted in `tokenproxy_token_store_errors_total`.
/// A command the server answers with an error (`READONLY`, `OOM`, `NOPERM`) is reported the
/// same way (`kind="refused"`, logged once until a write is accepted again), without the
/// backoff: the server answers, and reads may still work.
final class RedisClient: Sendable {
    /// The server and how to log in.
    let configuration: RedisStoreConfiguration
    /// How long a connection attempt may take.
    let connectTimeout: Duration
    /// How long a command may wait for its answer.
    let commandTimeout: Duration
    private let logger: Logger
    private let metrics: ProxyMetrics?
    private let idle = Mutex<[RedisConnection]>([])
    private let health = Mutex(Health())

    /// The connections kept open between commands.
    private static let idleLimit = 4
    private static let firstBackoff = Duration.milliseconds(250)
    private static let longestBackoff = Duration.seconds(5)

    private struct Health {
        /// Until when commands fail at once.
        var downUntil: ContinuousClock.Instant?
        /// The next backoff.
        var backoff = RedisClient.firstBackoff
        /// Whether the outage was logged.
        var reported = false
        /// Whether a refused command was logged since the last accepted write.
        var refusing = false
    }

    /// A client of `configuration`'s server; nothing is connected before the first command.
    init(
        _ configuration: RedisStoreConfiguration,
        connectTimeout: Duration = .seconds(1),
        commandTimeout: Duration = .seconds(1),
        metrics: ProxyMetrics?,
        logger: Logger
    ) {
        // A write to a server that went away must be an error, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        self.configuration = configuration
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.metrics = metrics
        self.logger = logger
    }

    /// Runs `body` on a connection. When a reused connection breaks (the server restarted,
    /// it closed an idle connection), `body` runs again once on a new one; any other failure
    /// starts the backoff and is thrown.
    func run<T>(_ body: (RedisConnection) throws(RedisError) -> T) throws(RedisError) -> T {
        if let until = self.health.withLockedValue({ $0.downUntil }), ContinuousClock.now < until {
            throw RedisError(.unreachable, "\(self.configuration.address) is not answering; retrying in a moment")
        }
        do throws(RedisError) {
            if let reused = self.idle.withLockedValue({ $0.popLast() }) {
                do throws(RedisError) {
                    let result = try self.attempt(body, on: reused)
                    self.succeeded()
                    return result
                } catch {
                    // A broken reused connection means the others are stale too (a restarted
                    // server): they are dropped and one new connection is tried.
                    guard reused.broken else { throw error }
                    self.idle.withLockedValue { $0.removeAll() }
                }
            }
            let fresh = try self.connect()
            let result = try self.attempt(body, on: fresh)
            self.succeeded()
            return result
        } catch {
            self.failed(error)
            throw error
        }
    }

    /// Runs one command and returns its answer; an error answer is reported (``refused(_:)``)
    /// and thrown as `refused`, naming `what` was refused.
    func command(_ arguments: [[UInt8]], what: String) throws(RedisError) -> RedisReply {
        let answer = try self.run { connection throws(RedisError) in try connection.command(arguments) }
        if case .error(let message) = answer {
            let error = RedisError(.refused, "\(what) was refused: \(message)")
            self.refused(error)
            throw error
        }
        return answer
    }

    /// Runs one command of text arguments (``command(_:what:)``).
    func command(_ arguments: [String], what: String) throws(RedisError) -> RedisReply {
        try self.command(arguments.map { Array($0.utf8) }, what: what)
    }

    /// Counts a command the server refused, and logs the first since the last accepted write.
    func refused(_ error: RedisError) {
        self.metrics?.tokenStoreError(store: "redis", kind: "refused")
        let first = self.health.withLockedValue { health -> Bool in
            defer { health.refusing = true }
            return !health.refusing
        }
        if first {
            self.logger.warning(
                "token store refused a command: tokens written meanwhile stay in this proxy until it accepts them",
                metadata: ["store": "\(self.configuration.address)", "error": "\(error.message)"]
            )
        }
    }

    /// Notes that the server accepted a write: a refusal logged before is over.
    func accepted() {
        let wasRefusing = self.health.withLockedValue { health -> Bool in
            defer { health.refusing = false }
            return health.refusing
        }
        if wasRefusing {
            self.logger.notice(
                "token store accepts writes again",
                metadata: ["store": "\(self.configuration.address)"]
            )
        }
    }

    /// Counts and logs a lease found lost: it expired or was taken while its holder still
    /// asked the token endpoint, so another proxy may be asking too.
    func leaseLost(_ key: String, _ why: String) {
        self.metrics?.tokenStoreError(store: "redis", kind: "lease_lost")
        self.logger.warning(
            "token store lease lost while its token request ran",
            metadata: ["store": "\(self.configuration.address)", "lease": "\(key)", "reason": "\(why)"]
        )
    }

    /// Counts and logs a stale lease found: a key with no expiry or a longer one than a lease
    /// has, which this proxy cut to one lifetime (``RedisScripts/acquireLease``).
    func staleLeaseFound(_ key: String) {
        self.metrics?.tokenStoreError(store: "redis", kind: "stale_lease")
        self.logger.warning(
            "token store lease had no expiry or a longer one than a lease has: cut to one lease lifetime, then taken over",
            metadata: ["store": "\(self.configuration.address)", "lease": "\(key)"]
        )
    }

    /// Runs `body` on `connection` and gives the connection back when it is still sound.
    private func attempt<T>(
        _ body: (RedisConnection) throws(RedisError) -> T,
        on connection: RedisConnection
    ) throws(RedisError) -> T {
        let result: T
        do {
            result = try body(connection)
        } catch {
            if !connection.broken { self.giveBack(connection) }
            throw error
        }
        if !connection.broken { self.giveBack(connection) }
        return result
    }

    private func giveBack(_ connection: RedisConnection) {
        self.idle.withLockedValue { idle in
            if idle.count < Self.idleLimit { idle.append(connection) }
        }
    }

    private func connect() throws(RedisError) -> RedisConnection {
        var password: String?
        if let secret = self.configuration.password {
            do {
                password = try secret.resolve()
            } catch {
                let reason = error.problems.map(\.message).joined(separator: "; ")
                throw RedisError(.refused, "token_store.redis.password (\(secret)) cannot be read: \(reason)")
            }
        }
        return try RedisConnection(
            self.configuration,
            password: password,
            connectTimeout: self.connectTimeout,
            commandTimeout: self.commandTimeout
        )
    }

    private func succeeded() {
        let recovered = self.health.withLockedValue { health -> Bool in
            defer {
                health.downUntil = nil
                health.backoff = Self.firstBackoff
                health.reported = false
            }
            return health.reported
        }
        if recovered {
            self.logger.notice(
                "token store answers again: tokens are shared again",
                metadata: ["store": "\(self.configuration.address)"]
            )
        }
    }

    private func failed(_ error: RedisError) {
        self.metrics?.tokenStoreError(store: "redis", kind: error.kind == .refused ? "refused" : "unreachable")
        let first = self.health.withLockedValue { health -> Bool in
            health.downUntil = .now + health.backoff
            health.backoff = min(health.backoff * 2, Self.longestBackoff)
            defer { health.reported = true }
            return !health.reported
        }
        if first {
            self.logger.warning(
                "token store unreachable: each proxy gets its own tokens until it answers",
                metadata: ["store": "\(self.configuration.address)", "error": "\(error.message)"]
            )
        }
    }
}
