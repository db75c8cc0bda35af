import Dispatch
import Foundation
import Synchronization
import TokenProxySupport

/// Turns the host of `token_store.redis.url` into a numeric address within the connect
/// timeout, so a resolver that does not answer costs the same bounded wait as a server that
/// does not answer (hiredis would otherwise call `getaddrinfo` with no deadline).
///
/// The lookup runs on a thread of its own (`tp-redis-dns`) and is waited for until the
/// deadline; a lookup still running then is left to end by itself, its answer unused. At
/// most ``lookupLimit`` lookups run at once: past that, connecting fails at once.
enum RedisAddressResolver {
    /// How many lookups may be running (or stuck) at once.
    static let lookupLimit = 4
    private static let worker = BlockingWorker(name: "tp-redis-dns", idleLimit: 1)
    private static let running = Atomic(0)

    /// How many lookups are running now.
    static var runningLookups: Int { Self.running.load(ordering: .relaxed) }

    /// `host` itself when it is an IPv4 or IPv6 address, else its addresses from the system's
    /// resolver (at most 8, in the resolver's order), by `deadline`.
    /// `lookUp` is the system's resolver unless a test gives another.
    static func numericAddresses(
        of host: String,
        deadline: ContinuousClock.Instant,
        lookUp: @escaping @Sendable (String) -> Result<[String], RedisError> = Self.lookUp
    ) throws(RedisError) -> [String] {
        if Self.isNumeric(host) { return [host] }
        guard Self.running.add(1, ordering: .relaxed).newValue <= Self.lookupLimit else {
            Self.running.subtract(1, ordering: .relaxed)
            throw RedisError(.unreachable, "cannot resolve \(host): earlier lookups are still running")
        }
        let answer = Mutex<Result<[String], RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Self.worker.run {
            defer { Self.running.subtract(1, ordering: .relaxed) }
            let result = lookUp(host)
            answer.withLockedValue { $0 = result }
            done.signal()
        }
        let left = max(deadline - .now, .zero)
        guard done.wait(timeout: .now() + .milliseconds(Int(clamping: left.milliseconds))) == .success,
            let result = answer.withLockedValue({ $0 })
        else {
            throw RedisError(.unreachable, "cannot resolve \(host) within the connect timeout")
        }
        return try result.get()
    }

    /// Whether `host` is an IPv4 or IPv6 address already.
    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `getaddrinfo` for a stream socket, the answers in numeric form.
    @Sendable static func lookUp(_ host: String) -> Result<[String], RedisError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            return .failure(RedisError(.unreachable, "cannot resolve \(host): \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next, addresses.count < 8 {
            next = entry.pointee.ai_next
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let named = getnameinfo(
                entry.pointee.ai_addr,
                entry.pointee.ai_addrlen,
                &text,
                socklen_t(text.count),
                nil,
                0,
                NI_NUMERICHOST
            )
            guard named == 0 else { continue }
            let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else {
            return .failure(RedisError(.unreachable, "cannot resolve \(host): no usable address"))
        }
        return .success(addresses)
    }
}
