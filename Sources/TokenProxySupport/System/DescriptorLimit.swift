import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The process's descriptor limit (`RLIMIT_NOFILE`) and the headroom the proxy keeps below
/// it (`docs/reference/http-behaviour.md`, "Descriptors").
///
/// A new descriptor takes the lowest free number, and `EMFILE` comes when no number below the
/// limit is free; so a descriptor numbered high shows that the table is nearly full. The
/// descriptors an outsider makes the proxy open, client connections and upstream sockets,
/// are kept out of the top of the table: an accepted connection numbered within
/// ``acceptReserve`` of the limit is refused, an upstream socket within half of it is not
/// used. The numbers left free serve what must never fail: libdispatch opens
/// `/proc/<tid>/stat` to watch its threads and stops the process when it cannot.
package enum DescriptorLimit {
    private static let cachedSoftLimit = Atomic<Int>(0)

    /// The current soft limit (read once, then kept; ``raiseSoftLimit()`` updates it).
    package static var softLimit: Int {
        let cached = self.cachedSoftLimit.load(ordering: .relaxed)
        if cached > 0 { return cached }
        var limit = rlimit()
        guard getrlimit(nofile, &limit) == 0 else { return 1024 }
        let soft = Self.clamped(limit.rlim_cur)
        self.cachedSoftLimit.store(soft, ordering: .relaxed)
        return soft
    }

    /// The lowest soft limit `serve` starts with: the engines' eventfds and libcurl's wake-up
    /// pairs, the listeners, the log writer and libdispatch's own descriptors need about 20,
    /// and libdispatch stops the process with SIGILL when it cannot open one it needs.
    package static let minimumToServe = 32

    /// The descriptor numbers at the top of the table that client connections never hold:
    /// an eighth of the limit, at least 16 and at most 512.
    static var acceptReserve: Int {
        min(max(self.softLimit / 8, 16), 512)
    }

    /// Whether an accepted connection's descriptor leaves enough free above it to be served.
    package static func admitsConnection(_ descriptor: Int32) -> Bool {
        Int(descriptor) < self.softLimit - self.acceptReserve
    }

    /// Whether a new upstream socket leaves enough free above it to be used.
    package static func admitsUpstreamSocket(_ descriptor: Int32) -> Bool {
        Int(descriptor) < self.softLimit - self.acceptReserve / 2
    }

    /// Whether `errno` says a descriptor or the memory for one could not be had (`EMFILE`,
    /// `ENFILE`, `ENOBUFS`, `ENOMEM`): a shortage that passes, not a broken socket.
    package static func isShortage(_ errno: Int32) -> Bool {
        errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM
    }

    /// Raises the soft limit to the hard one (as Go's runtime and nginx's
    /// `worker_rlimit_nofile` do), or to the kernel's `fs.nr_open` when the hard limit is
    /// unlimited. Returns the soft and hard limits now in force.
    @discardableResult
    package static func raiseSoftLimit() -> (soft: Int, hard: Int) {
        var limit = rlimit()
        guard getrlimit(nofile, &limit) == 0 else { return (self.softLimit, self.softLimit) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(nofile, &raised) != 0, let ceiling = Self.kernelCeiling(),
                rlim_t(ceiling) > limit.rlim_cur
            {
                raised.rlim_cur = rlim_t(ceiling)
                _ = setrlimit(nofile, &raised)
            }
            _ = getrlimit(nofile, &limit)
        }
        let soft = Self.clamped(limit.rlim_cur)
        self.cachedSoftLimit.store(soft, ordering: .relaxed)
        return (soft, Self.clamped(limit.rlim_max))
    }

    private static var nofile: __rlimit_resource_t {
        __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    }

    /// `fs.nr_open`: the most descriptors a process can have.
    private static func kernelCeiling() -> Int? {
        guard let file = fopen("/proc/sys/fs/nr_open", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let text = String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let value = Int(text), value > 0 else { return nil }
        return value
    }

    /// Unlimited (`RLIM_INFINITY`) and anything past `Int32.max` count as `Int32.max`.
    private static func clamped(_ value: rlim_t) -> Int {
        value > rlim_t(Int32.max) ? Int(Int32.max) : Int(value)
    }
}
