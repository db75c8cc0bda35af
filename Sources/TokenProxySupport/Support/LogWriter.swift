import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Moves log lines to a file descriptor from a thread of its own.
///
/// The proxy logs from Dispatch workers and from the upstream engines' threads. A `write` to
/// standard error there would let a reader that stops taking bytes (a terminal paused with
/// Ctrl-S, a log collector that fell behind on a pipe) stall every thread that logs, and with
/// them the proxy. Lines are appended to a bounded buffer instead, and the writer thread
/// writes them out in order. While the buffer is full, new lines are dropped and counted;
/// the count is reported through ``reportDrops(_:)`` once the descriptor takes bytes again.
///
/// `@unchecked Sendable`: every stored property is either immutable or guarded by
/// `condition`.
package final class LogWriter: @unchecked Sendable {
    /// The process's standard error.
    package static let standardError = LogWriter(descriptor: STDERR_FILENO)

    /// Bytes waiting for the writer above which new lines are dropped. The writer may hold
    /// as much again while it writes, so this also bounds the memory a stalled reader costs.
    static let defaultLimit = 1 << 20

    /// How long the writer lets lines gather after a write before it looks again.
    private static let gatherMicroseconds: UInt32 = 1000

    private let descriptor: Int32
    private let limit: Int
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var pending: [UInt8] = []
    private var dropped = 0
    private var writing = false
    private var started = false
    private var dropReporter: (@Sendable (Int) -> Void)?

    /// A writer to `descriptor`, which it does not close. Its thread starts with the first
    /// line and lives as long as the process.
    package init(descriptor: Int32, limit: Int = LogWriter.defaultLimit) {
        self.descriptor = descriptor
        self.limit = limit
    }

    /// Sets what is told, on the writer's thread, how many lines were dropped since the last
    /// report: a logger through this writer turns it into a line of the log's own format.
    package func reportDrops(_ reporter: @escaping @Sendable (Int) -> Void) {
        self.condition.withLock { self.dropReporter = reporter }
    }

    /// Queues one line (its bytes as given, newline included), or drops it when the buffer
    /// is full. Never waits for the descriptor.
    package func append(_ line: some Collection<UInt8>) {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard self.pending.count + line.count <= self.limit else {
            self.dropped += 1
            return
        }
        self.pending.append(contentsOf: line)
        if !self.started {
            self.started = true
            NamedThread.start(named: "tp-log-writer") { [self] in self.run() }
        }
        // Without a waiter (the writer is busy), this is a check in user space.
        self.condition.broadcast()
    }

    /// Waits until every line queued so far is written, for at most `timeout`; returns
    /// whether it was. For the end of the process, never for a thread serving connections.
    @discardableResult
    package func flush(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
        self.condition.lock()
        defer { self.condition.unlock() }
        while !self.pending.isEmpty || self.writing {
            guard self.condition.wait(until: deadline) else {
                return false
            }
        }
        return true
    }

    private func run() {
        var batch: [UInt8] = []
        self.condition.lock()
        while true {
            while self.pending.isEmpty, self.dropped == 0 {
                self.condition.wait()
            }
            swap(&batch, &self.pending)
            let dropped = self.dropped
            self.dropped = 0
            let reporter = self.dropReporter
            self.writing = true
            self.condition.unlock()

            self.write(batch)
            // Keep a small buffer for the next batch; a burst's large one goes back to malloc.
            batch.removeAll(keepingCapacity: batch.capacity <= 64 * 1024)
            if dropped > 0 {
                // Appends to the buffer just emptied, so it follows the lines written above.
                reporter?(dropped)
            }

            self.condition.lock()
            self.writing = false
            self.condition.broadcast()
            self.condition.unlock()
            // Let lines gather for a moment: under load that is one wake-up and one `write`
            // for many lines instead of one each; a line waits at most this long.
            usleep(Self.gatherMicroseconds)
            self.condition.lock()
        }
    }

    /// Writes all of `bytes`, waiting for the descriptor as long as it takes. Bytes the
    /// descriptor refuses for good (a closed pipe) are discarded.
    private func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard var next = buffer.baseAddress else { return }
            var left = buffer.count
            while left > 0 {
                let written = Glibc.write(self.descriptor, next, left)
                if written > 0 {
                    next += written
                    left -= written
                } else if written < 0, errno == EINTR {
                    continue
                } else if written < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    // A descriptor someone made non-blocking: wait until it takes bytes.
                    var entry = pollfd(fd: self.descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&entry, 1, -1)
                } else {
                    return
                }
            }
        }
    }
}
