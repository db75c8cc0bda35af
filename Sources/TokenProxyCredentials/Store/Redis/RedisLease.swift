import Dispatch
import Foundation
import Synchronization
import TokenProxySupport

/// A provider's lease on Redis (`SET KEY FENCE NX PX TTL`), held while one proxy of the fleet
/// asks the token endpoint, together with the process's own provider lock.
///
/// The fencing value is random, so only the holder renews (every third of the lease's
/// lifetime, while the token request runs) or deletes it (``RedisScripts``). A holder that
/// dies stops renewing, and the lease expires after its lifetime: nobody waits for ever. A
/// lease key with no expiry, or a longer one than a lease has, is stale: the first proxy to
/// find it cuts its expiry to one lifetime (``RedisScripts/acquireLease``), logs a warning
/// and counts it (`kind="stale_lease"`), and the key is taken over once that passes. A
/// renewal that finds the lease gone or another's is logged and counted (``RedisClient/leaseLost(_:_:)``)
/// and renewals stop; the store's writes carry the fence, so the write of a holder whose
/// lease was lost is checked against what the new holder wrote.
final class RedisLease: TokenStoreLock {
    private let client: RedisClient
    private let key: String
    /// The random value that marks this holder's lease.
    let fence: String
    private let local: any TokenStoreLock
    private let lifetime: Duration
    private let onRelease: @Sendable (String) -> Void
    /// Whether the lease is still held and renewed (renewals stop once it is not).
    private let held = Mutex(true)
    /// Whether a renewal found the lease lost (renewals stop, the release still frees the
    /// process's lock).
    private let lost = Mutex(false)

    /// The queue that renews leases: its commands block up to the command timeout, so they
    /// never run on a queue that serves connections.
    private static let renewals = DispatchQueue(label: "tp-redis-leases")

    /// Takes the lease `key` for the holder of `local`, polling with backoff (10 ms doubling
    /// to 200 ms) until `deadline`. Returns nil when it was not taken in time; throws when the
    /// server cannot be reached or refuses the command. `onRelease` gets the fence once the
    /// lease is released.
    static func acquire(
        client: RedisClient,
        key: String,
        lifetime: Duration,
        local: any TokenStoreLock,
        deadline: ContinuousClock.Instant,
        onRelease: @escaping @Sendable (String) -> Void
    ) throws(RedisError) -> RedisLease? {
        var generator = SystemRandomNumberGenerator()
        let fence = Hex.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let milliseconds = String(max(1, lifetime.milliseconds))
        var pause = Duration.milliseconds(10)
        while true {
            let answer = try client.command(
                ["EVAL", RedisScripts.acquireLease, "1", key, fence, milliseconds],
                what: "the lease of \(key)"
            )
            switch answer.integer {
            case 1:
                return RedisLease(
                    client: client,
                    key: key,
                    fence: fence,
                    lifetime: lifetime,
                    local: local,
                    onRelease: onRelease
                )
            case 0:
                break
            case 2:
                client.staleLeaseFound(key)
            case 3:
                throw RedisError(.refused, "\(key) holds another type of value than a lease")
            default:
                throw RedisError(.refused, "the lease of \(key) gave an unexpected answer")
            }
            let now = ContinuousClock.now
            guard now < deadline else { return nil }
            Thread.sleep(forTimeInterval: Double(min(pause, deadline - now).milliseconds) / 1000)
            pause = min(pause * 2, .milliseconds(200))
        }
    }

    private init(
        client: RedisClient,
        key: String,
        fence: String,
        lifetime: Duration,
        local: any TokenStoreLock,
        onRelease: @escaping @Sendable (String) -> Void
    ) {
        self.client = client
        self.key = key
        self.fence = fence
        self.local = local
        self.lifetime = lifetime
        self.onRelease = onRelease
        Self.planRenewal(of: self)
    }

    /// Plans the next renewal a third of the lifetime from now: the deadline scheduler times
    /// it, the renewal queue sends it, and it stops once the lease is released.
    private static func planRenewal(of lease: RedisLease) {
        let interval = Duration.milliseconds(max(1, lease.lifetime.milliseconds / 3))
        DeadlineScheduler.shared.schedule(at: .now + interval) { [weak lease] in
            Self.renewals.async { [weak lease] in
                guard let lease, lease.held.withLockedValue({ $0 }) else { return }
                let arguments = [
                    "EVAL", RedisScripts.renewLease, "1", lease.key, lease.fence, String(lease.lifetime.milliseconds),
                ]
                // A failed renewal is not fatal: the token request goes on, and the lease
                // expires unless a later renewal gets through. One that finds the lease gone
                // is reported, and renewing stops.
                let answer = try? lease.client.command(arguments, what: "the lease renewal")
                if answer?.integer == 0 {
                    lease.lost.withLockedValue { $0 = true }
                    lease.client.leaseLost(lease.key, "the renewal found it expired or held by another proxy")
                    return
                }
                Self.planRenewal(of: lease)
            }
        }
    }

    deinit {
        self.release()
    }

    /// Stops renewing, deletes the lease if it is still this holder's, and releases the
    /// process's lock; later calls do nothing.
    func release() {
        let wasHeld = self.held.withLockedValue { held in
            defer { held = false }
            return held
        }
        guard wasHeld else { return }
        self.onRelease(self.fence)
        if !self.lost.withLockedValue({ $0 }) {
            let arguments = ["EVAL", RedisScripts.releaseLease, "1", self.key, self.fence]
            _ = try? self.client.command(arguments, what: "the lease release")
        }
        self.local.release()
    }
}
