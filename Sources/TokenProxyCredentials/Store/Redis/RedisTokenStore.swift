import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics
import TokenProxySupport

/// The token store on a Redis server shared by a fleet of proxies (`docs/guide/redis.md`).
///
/// Layout, under the key prefix: the hash `tokens` holds one sealed value per field
/// (`grant:PROVIDER`, `pending_revocations`), plus `epoch` (random, set by the write that
/// creates the hash) and `revision` (counts the writes); `lease:PROVIDER` is the lease of the
/// proxy asking the provider's token endpoint. Every value is sealed (``RedisValueSeal``),
/// so the server holds no token in clear. An update is a compare-and-set of the fields it
/// changes (``RedisScripts/compareAndSet``), so a rotated refresh token is never overwritten
/// by an older one.
///
/// Availability first: when the server cannot be reached or refuses a write, the store
/// serves from this process's memory (the last contents it saw, and what it wrote since), so
/// each proxy gets its own tokens meanwhile. Once the server takes writes again, the grants
/// written meanwhile go to it when it holds none newer, and sharing resumes. A server that
/// lost the hash (restarted empty, the key evicted or deleted) shows another epoch: the
/// grants this process holds and the server lacks are written back, never given up.
/// With `sharedOnly` (one-shot commands: `login`, `logout`, `token`) there is no memory
/// fallback: what such a process wrote to its memory would end with it.
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
    /// Whether an unreachable server fails the call instead of falling back to memory.
    let sharedOnly: Bool

    /// What was not shared yet, which refused values were reported, the hash's epoch as last
    /// seen, and the leases this process holds.
    struct State {
        /// Fields written to ``local`` while the server was unreachable or refused writes.
        var unshared: Set<String> = []
        /// The refused values already reported (field and a digest of the value).
        var reported: Set<String> = []
        /// The epoch of the hash this process last read or wrote; another (or none) means
        /// the server lost what this process saw.
        var seenEpoch: String?
        /// Provider name → the fence of the lease this process holds on it.
        var leases: [String: String] = [:]
        /// Field → the highest generation this process read or wrote of it
        /// (``RedisSealedRecord``), in the hash of epoch ``generationsEpoch``.
        var generations: [String: Int] = [:]
        /// The epoch of the hash ``generations`` were seen in.
        var generationsEpoch: String?
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
        sharedOnly: Bool = false,
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        self.sharedOnly = sharedOnly
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

    func read() throws(TokenStoreError) -> TokenStoreContents {
        do {
            return try self.settled()
        } catch {
            switch error {
            case .store(let failure): throw failure
            case .redis(let failure):
                if self.sharedOnly { throw self.unavailable(failure) }
                return try self.local.read()
            }
        }
    }

    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        do {
            return try self.updateShared(body)
        } catch {
            // The key cannot be read: nothing is written anywhere, as with the file store.
            if case .store(let failure) = error { throw failure }
            if case .redis(let failure) = error, self.sharedOnly { throw self.unavailable(failure) }
            // Unreachable or refused: change this process's copy, and share it once the
            // server takes it.
            return try self.local.update { contents in
                let before = contents
                let result = body(&contents)
                let changed = Self.changedFields(before, contents)
                self.state.withLockedValue { $0.unshared.formUnion(changed) }
                return result
            }
        }
    }

    /// The server's epoch and revision counter (`redis:EPOCH:N`), or this process's copy's
    /// (`local:N`) while the server cannot be reached: a change between the two is a change
    /// too. A hash whose epoch is not the one this process last saw was lost (restarted
    /// empty, evicted, deleted): the grants this process holds are written back first, so
    /// the revision returned is the restored hash's, never one that looks like an earlier.
    func revision() -> String? {
        guard let (epoch, counter) = self.serverRevision() else {
            return self.local.revision().map { "local:\($0)" }
        }
        if !self.state.withLockedValue({ $0.unshared.isEmpty }) { _ = try? self.shareUnshared() }
        if let seen = self.state.withLockedValue({ $0.seenEpoch }), seen != epoch, (try? self.settled()) != nil,
            let (after, afterCounter) = self.serverRevision()
        {
            return "redis:\(after ?? "-"):\(afterCounter)"
        }
        return "redis:\(epoch ?? "-"):\(counter)"
    }

    /// The hash's epoch (nil: no hash) and revision counter; nil when the server cannot be
    /// asked.
    private func serverRevision() -> (epoch: String?, counter: String)? {
        guard
            let answer = try? self.client.command(["HMGET", self.seal.hashKey, "epoch", "revision"], what: "HMGET"),
            case .array(let items) = answer, items.count == 2
        else { return nil }
        let text = items.map { $0.bytes.map(Self.counterText) }
        return (text[0], text[1] ?? "0")
    }

    /// The error of a one-shot command whose store cannot be reached.
    private func unavailable(_ failure: RedisError) -> TokenStoreError {
        TokenStoreError(
            .unavailable,
            "\(self.location) cannot be used (\(failure.message)); this command needs it and changes "
                + "nothing without it: run it again once the server answers"
        )
    }

    /// Asks the server (`PING`, after connecting and logging in); nil when it answers.
    func unavailability() -> String? {
        do {
            _ = try self.client.command(["PING"], what: "PING")
            return nil
        } catch {
            return error.message
        }
    }

    /// The key of provider `name`'s lease.
    func leaseKey(_ name: String) -> String { self.prefix + "lease:" + name }

    /// Takes this process's provider lock, then the provider's lease on the server (or only
    /// the process's lock while the server cannot be reached).
    func lockProvider(_ name: String, deadline: ContinuousClock.Instant) throws(TokenStoreError) -> any TokenStoreLock {
        let local = try self.local.lockProvider(name, deadline: deadline)
        let lease: RedisLease?
        do {
            lease = try RedisLease.acquire(
                client: self.client,
                key: self.leaseKey(name),
                lifetime: self.leaseLifetime,
                local: local,
                deadline: deadline
            ) { [weak self] fence in
                self?.state.withLockedValue { state in
                    if state.leases[name] == fence { state.leases[name] = nil }
                }
            }
        } catch {
            if self.sharedOnly {
                local.release()
                throw self.unavailable(error)
            }
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
        self.state.withLockedValue { $0.leases[name] = lease.fence }
        return lease
    }
}
