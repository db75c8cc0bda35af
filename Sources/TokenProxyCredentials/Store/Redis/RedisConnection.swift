import CHiredis
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// One connection to a Redis server through hiredis, driven without blocking: hiredis frames
/// the commands and parses the answers, and this type moves the bytes with `poll` against one
/// deadline per command. A server that stops answering, or drips its answer a byte at a time,
/// costs at most the command timeout; an answer past ``replyLimit`` bytes is refused. Used by
/// one thread at a time (``RedisClient`` lends it out); after a failure it is ``broken`` and
/// is closed instead of being lent again.
///
/// Arguments go through `redisAppendCommandArgv` with their lengths: no value is formatted
/// into a command line, so any bytes are safe to send.
///
/// `@unchecked Sendable`: a connection moves between threads only through ``RedisClient``'s
/// Mutex-guarded pool, and only the thread that took it out uses it until it is given back.
final class RedisConnection: @unchecked Sendable {
    private let context: UnsafeMutablePointer<redisContext>
    private let commandTimeout: Duration
    /// A command failed at the connection (I/O error, timeout, protocol error, an answer too
    /// large): the connection's state is unknown and it must not be used again. Only the
    /// thread that took the connection out of ``RedisClient``'s pool reads or writes it; the
    /// pool's mutex orders one holder's writes before the next holder's reads.
    private(set) var broken = false

    /// The most bytes one answer may take: the largest the store asks for (a hash of sealed
    /// grants) is a few kilobytes.
    static let replyLimit = 1 << 20

    /// Connects to `configuration`'s server (the name resolved and the connection made within
    /// `connectTimeout`), logs in (`AUTH`) and selects its database. `password` is the
    /// resolved password, if any.
    init(
        _ configuration: RedisStoreConfiguration,
        password: String?,
        connectTimeout: Duration,
        commandTimeout: Duration
    ) throws(RedisError) {
        let deadline = ContinuousClock.now + connectTimeout
        let made = try Self.connect(configuration.address, deadline: deadline)
        self.context = made
        self.commandTimeout = commandTimeout
        guard tp_redis_set_nonblocking(made) == 0 else {
            throw RedisError(.unreachable, "cannot drive the connection to \(configuration.address) without blocking")
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

    /// A connected context to `address`: each of the host's addresses in turn (the name
    /// resolved by ``RedisAddressResolver``), all within `deadline`.
    private static func connect(
        _ address: RedisStoreConfiguration.Address,
        deadline: ContinuousClock.Instant
    ) throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        var reason = "no address"
        let targets: [String]
        let port: Int
        switch address {
        case .tcp(let host, let hostPort):
            targets = try RedisAddressResolver.numericAddresses(of: host, deadline: deadline)
            port = hostPort
        case .unix(let path):
            targets = [path]
            port = -1
        }
        for target in targets {
            guard deadline > .now else {
                reason = "no connection within the connect timeout"
                break
            }
            let time = Self.timeValue(deadline - .now)
            let made =
                port < 0
                ? redisConnectUnixWithTimeout(target, time)
                : redisConnectWithTimeout(target, Int32(clamping: port), time)
            guard let made else {
                reason = "out of memory"
                continue
            }
            if made.pointee.err == 0 { return made }
            reason = String(cString: tp_redis_errstr(made))
            redisFree(made)
        }
        throw RedisError(.unreachable, "cannot connect to \(address): \(reason)")
    }

    /// Sends one command of text arguments and returns the answer (an `.error` answer is
    /// returned, not thrown: the connection is still fine). Throws when the connection failed.
    func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        try self.command(arguments.map { Array($0.utf8) })
    }

    /// Sends one command of binary arguments and returns the answer; throws `unreachable`
    /// (and marks the connection broken) on an I/O error, a protocol error, an answer larger
    /// than ``replyLimit``, or when the whole exchange took longer than the command timeout.
    func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        guard !self.broken else { throw RedisError(.unreachable, "the connection failed before") }
        let deadline = ContinuousClock.now + self.commandTimeout
        do throws(RedisError) {
            try self.append(arguments)
            try self.flush(deadline: deadline)
            return try self.answer(deadline: deadline)
        } catch {
            self.broken = true
            throw error
        }
    }

    /// Frames `arguments` into hiredis's output buffer.
    private func append(_ arguments: [[UInt8]]) throws(RedisError) {
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
        let status: Int32 = joined.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return REDIS_ERR }
            var pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self)
            }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { sizes in
                    redisAppendCommandArgv(
                        self.context,
                        Int32(clamping: arguments.count),
                        argv.baseAddress,
                        sizes.baseAddress
                    )
                }
            }
        }
        guard status == REDIS_OK else { throw RedisError(.unreachable, "cannot frame the command: out of memory") }
    }

    /// Writes the output buffer, waiting for the socket to take more until `deadline`.
    private func flush(deadline: ContinuousClock.Instant) throws(RedisError) {
        var done: Int32 = 0
        while true {
            guard redisBufferWrite(self.context, &done) == REDIS_OK else { throw self.failure() }
            if done != 0 { return }
            try self.wait(for: Int16(POLLOUT), until: deadline)
        }
    }

    /// Reads until hiredis has parsed one answer, at most ``replyLimit`` bytes, by `deadline`.
    private func answer(deadline: ContinuousClock.Instant) throws(RedisError) -> RedisReply {
        let fd = tp_redis_fd(self.context)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var received = 0
        while true {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReplyFromReader(self.context, &raw) == REDIS_OK else { throw self.failure() }
            if let raw {
                defer { freeReplyObject(raw) }
                // Bytes past the one answer would be taken for the next command's answer: the
                // connection is not used again.
                if tp_redis_reader_pending(self.context) > 0 { self.broken = true }
                return RedisReply(copying: raw.assumingMemoryBound(to: redisReply.self))
            }
            try self.wait(for: Int16(POLLIN), until: deadline)
            let outcome: IOResult<Int>
            do {
                outcome = try buffer.withUnsafeMutableBytes { bytes throws(SystemError) in
                    try syscall("read") { Glibc.read(fd, bytes.baseAddress, bytes.count) }
                }
            } catch {
                throw RedisError(.unreachable, "reading the answer failed: \(error)")
            }
            guard case .processed(let count) = outcome else { continue }
            guard count > 0 else { throw RedisError(.unreachable, "the server closed the connection") }
            received += count
            guard received <= Self.replyLimit else {
                throw RedisError(.unreachable, "the answer is larger than \(Self.replyLimit) bytes")
            }
            let fed = buffer.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) {
                    redisReaderFeed(tp_redis_reader(self.context), $0.baseAddress, count)
                }
            }
            guard fed == REDIS_OK else { throw RedisError(.unreachable, "cannot buffer the answer: out of memory") }
        }
    }

    /// Waits until the socket is ready for `events` (or failed), at most until `deadline`.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(RedisError) {
        let fd = tp_redis_fd(self.context)
        while true {
            let left = deadline - .now
            guard left > .zero else { throw RedisError(.unreachable, "no answer within the command timeout") }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let milliseconds = Int32(clamping: max(1, left.milliseconds))
            let ready = Glibc.poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR {
                throw RedisError(.unreachable, "waiting for the server failed (errno \(errno))")
            }
        }
    }

    /// The context's error (I/O or protocol) as a ``RedisError``.
    private func failure() -> RedisError {
        let reason = self.context.pointee.err != 0 ? String(cString: tp_redis_errstr(self.context)) : "no reply"
        return RedisError(.unreachable, reason)
    }

    /// `duration` as a `struct timeval`, at least 1 ms (a zero timeval means "no timeout").
    private static func timeValue(_ duration: Duration) -> Glibc.timeval {
        let milliseconds = max(1, min(duration.milliseconds, 3_600_000))
        return Glibc.timeval(tv_sec: Int(milliseconds / 1000), tv_usec: Int(milliseconds % 1000) * 1000)
    }
}
