import CHiredis
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// One blocking connection to a Redis server through hiredis, with a connect timeout and a
/// timeout on every command (`redisSetTimeout`), so a server that stops answering costs a
/// bounded wait. Used by one thread at a time (``RedisClient`` lends it out); after a
/// failure it is ``broken`` and is closed instead of being lent again.
///
/// Arguments go through `redisCommandArgv` with their lengths: no value is formatted into
/// a command line, so any bytes are safe to send.
///
/// `@unchecked Sendable`: a connection moves between threads only through ``RedisClient``'s
/// Mutex-guarded pool, and only the thread that took it out uses it until it is given back.
final class RedisConnection: @unchecked Sendable {
    private let context: UnsafeMutablePointer<redisContext>
    /// A command failed at the connection (I/O error, timeout, protocol error): the
    /// connection's state is unknown and it must not be used again.
    private(set) var broken = false

    /// Connects to `configuration`'s server, logs in (`AUTH`) and selects its database.
    /// `password` is the resolved password, if any.
    init(
        _ configuration: RedisStoreConfiguration,
        password: String?,
        connectTimeout: Duration,
        commandTimeout: Duration
    ) throws(RedisError) {
        let connectTime = Self.timeValue(connectTimeout)
        let made: UnsafeMutablePointer<redisContext>?
        switch configuration.address {
        case .tcp(let host, let port):
            made = redisConnectWithTimeout(host, Int32(clamping: port), connectTime)
        case .unix(let path):
            made = redisConnectUnixWithTimeout(path, connectTime)
        }
        guard let made else {
            throw RedisError(.unreachable, "cannot connect to \(configuration.address): out of memory")
        }
        guard made.pointee.err == 0 else {
            let reason = String(cString: tp_redis_errstr(made))
            redisFree(made)
            throw RedisError(.unreachable, "cannot connect to \(configuration.address): \(reason)")
        }
        self.context = made
        guard redisSetTimeout(made, Self.timeValue(commandTimeout)) == REDIS_OK else {
            throw RedisError(.unreachable, "cannot set the command timeout on \(configuration.address)")
        }
        if let password {
            var login = [Array("AUTH".utf8)]
            if let user = configuration.username { login.append(Array(user.utf8)) }
            login.append(Array(password.utf8))
            if case .error(let message) = try self.command(login) {
                // The server's message names the problem (WRONGPASS, NOAUTH); never the password.
                throw RedisError(.refused, "\(configuration.address) refused the login: \(message)")
            }
        }
        if configuration.database != 0 {
            if case .error(let message) = try self.command(["SELECT", String(configuration.database)]) {
                throw RedisError(
                    .refused,
                    "\(configuration.address) refused database \(configuration.database): \(message)"
                )
            }
        }
    }

    deinit {
        redisFree(self.context)
    }

    /// Sends one command of text arguments and returns the answer (an `.error` answer is
    /// returned, not thrown: the connection is still fine). Throws when the connection failed.
    func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        try self.command(arguments.map { Array($0.utf8) })
    }

    /// Sends one command of binary arguments and returns the answer; throws `unreachable`
    /// (and marks the connection broken) on an I/O error or a timeout.
    func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        guard !self.broken else { throw RedisError(.unreachable, "the connection failed before") }
        var joined: [UInt8] = []
        joined.reserveCapacity(arguments.reduce(0) { $0 + $1.count } + 1)
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(joined.count)
            lengths.append(argument.count)
            joined += argument
        }
        joined.append(0)  // Never an empty buffer, so its base address exists.
        let raw: UnsafeMutableRawPointer? = joined.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self)
            }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { sizes in
                    redisCommandArgv(
                        self.context,
                        Int32(clamping: arguments.count),
                        argv.baseAddress,
                        sizes.baseAddress
                    )
                }
            }
        }
        guard let raw else {
            self.broken = true
            let reason = self.context.pointee.err != 0 ? String(cString: tp_redis_errstr(self.context)) : "no reply"
            throw RedisError(.unreachable, reason)
        }
        defer { freeReplyObject(raw) }
        return RedisReply(copying: raw.assumingMemoryBound(to: redisReply.self))
    }

    /// `duration` as a `struct timeval`, at least 1 ms (a zero timeval means "no timeout").
    private static func timeValue(_ duration: Duration) -> Glibc.timeval {
        let milliseconds = max(1, min(duration.milliseconds, 3_600_000))
        return Glibc.timeval(tv_sec: Int(milliseconds / 1000), tv_usec: Int(milliseconds % 1000) * 1000)
    }
}
