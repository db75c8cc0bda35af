import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics
import TokenProxySupport

/// The token store on a Redis server shared by a fleet of proxies (`docs/guide/redis.md`).
///
/// Layout, under the key prefix: the hash `tokens` holds one sealed value per field
/// (`grant:PROVIDER`, `pending_revocations`), `revision` counts the writes, and
/// `lease:PROVIDER` is the lease of the proxy asking the provider's token endpoint. Every
/// value is sealed (``RedisValueSeal``), so the server holds no token in clear. An update
/// is a compare-and-set of the fields it changes (``RedisScripts/compareAndSet``), so a
/// rotated refresh token is never overwritten by an older one.
///
/// Availability first: when the server cannot be reached, the store serves from this
/// process's memory (the last contents it saw, and what it wrote since), so each proxy gets
/// its own tokens meanwhile. Once the server answers again, the grants written meanwhile go
/// to it when it holds none newer, and sharing resumes.
final class RedisTokenStore: TokenStore {
    /// The connections and the server's health.
    let client: RedisClient
    /// How values are sealed.
    let seal: RedisValueSeal
    /// The key prefix.
    let prefix: String
    /// How long a lease lasts without renewal (a dead holder's lease expires after it).
    let leaseLifetime: Duration
    /// The contents as last seen, and what was written while the server was unreachable.
    let local = MemoryTokenStore()
    /// What was not shared yet, and which refused values were reported.
    let state = Mutex(State())
    let logger: Logger
    let metrics: ProxyMetrics?

    /// What was not shared yet, and which refused values were reported.
    struct State {
        /// Fields written to ``local`` while the server was unreachable.
        var unshared: Set<String> = []
        /// The refused values already reported (field and a digest of the value).
        var reported: Set<String> = []
    }

    /// The hash field of provider `name`'s grant.
    static func grantField(_ name: String) -> String { "grant:\(name)" }
    /// The hash field of the pending revocations.
    static let revocationsField = "pending_revocations"

    /// A store on `configuration`'s server.
    init(
        _ configuration: RedisStoreConfiguration,
        connectTimeout: Duration = .seconds(1),
        commandTimeout: Duration = .seconds(1),
        leaseLifetime: Duration = .seconds(10),
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        self.client = RedisClient(
            configuration,
            connectTimeout: connectTimeout,
            commandTimeout: commandTimeout,
            metrics: metrics,
            logger: logger
        )
        self.prefix = configuration.keyPrefix
        self.seal = RedisValueSeal(
            encryptionKey: configuration.encryptionKey,
            hashKey: configuration.keyPrefix + "tokens"
        )
        self.leaseLifetime = leaseLifetime
        self.metrics = metrics
        self.logger = logger
    }

    /// `redis HOST:PORT/DB (key prefix P)`, for messages.
    var location: String {
        let configuration = self.client.configuration
        return "redis \(configuration.address)/\(configuration.database) (key prefix \(configuration.keyPrefix))"
    }

    private var revisionKey: String { self.prefix + "revision" }

    func read() throws(TokenStoreError) -> TokenStoreContents {
        let contents: TokenStoreContents
        do {
            contents = try self.fetch().contents
        } catch {
            switch error {
            case .store(let failure): throw failure
            case .redis: return try self.local.read()
            }
        }
        if self.state.withLock({ $0.unshared.isEmpty }) {
            _ = try? self.local.update { $0 = contents }
        }
        return contents
    }

    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        do {
            return try self.updateShared(body)
        } catch {
            // The key cannot be read: nothing is written anywhere, as with the file store.
            if case .store(let failure) = error { throw failure }
            // Unreachable: change this process's copy, and share it once the server answers.
            return try self.local.update { contents in
                let before = contents
                let result = body(&contents)
                let changed = Self.changedFields(before, contents)
                self.state.withLock { $0.unshared.formUnion(changed) }
                return result
            }
        }
    }

    /// The server's revision counter (`redis:N`), or this process's copy's (`local:N`) while
    /// the server cannot be reached: a change between the two is a change too.
    func revision() -> String? {
        let key = self.revisionKey
        guard
            let answer = try? self.client.run({ connection throws(RedisError) in
                try connection.command(["GET", key])
            })
        else {
            return self.local.revision().map { "local:\($0)" }
        }
        if !self.state.withLock({ $0.unshared.isEmpty }) { _ = try? self.shareUnshared() }
        return "redis:" + (answer.bytes.map { String(decoding: $0, as: UTF8.self) } ?? "0")
    }

    /// Asks the server (`PING`, after connecting and logging in); nil when it answers.
    func unavailability() -> String? {
        do {
            let answer = try self.client.run { connection throws(RedisError) in try connection.command(["PING"]) }
            if case .error(let message) = answer { return message }
            return nil
        } catch {
            return error.message
        }
    }

    /// Takes this process's provider lock, then the provider's lease on the server (or only
    /// the process's lock while the server cannot be reached).
    func lockProvider(_ name: String, deadline: ContinuousClock.Instant) throws(TokenStoreError) -> any TokenStoreLock {
        let local = try self.local.lockProvider(name, deadline: deadline)
        let lease: RedisLease?
        do {
            lease = try RedisLease.acquire(
                client: self.client,
                key: self.prefix + "lease:" + name,
                lifetime: self.leaseLifetime,
                local: local,
                deadline: deadline
            )
        } catch {
            return local  // Unreachable: this process's lock alone.
        }
        guard let lease else {
            local.release()
            throw TokenStoreError(
                .lockTimeout,
                "timed out waiting for the lease of provider \(name) (\(self.location)): "
                    + "another proxy is obtaining its token"
            )
        }
        return lease
    }
}
