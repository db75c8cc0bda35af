import Dispatch
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The production ``ConnectionTransport``: a non-blocking client socket with a
/// DispatchSourceRead, a DispatchSourceWrite and a timer source on the connection's queue.
///
/// The descriptor is closed only after both sources' cancel handlers have run, so that
/// Dispatch never watches a descriptor number the process has reused; suspended sources are
/// resumed before they are cancelled, as Dispatch requires.
struct SocketTransport: ConnectionTransport {
    /// The client socket.
    let descriptor: Int32
    private let readSource: DispatchSourceRead
    private let writeSource: DispatchSourceWrite
    private let timer: DispatchSourceTimer

    /// Wraps `descriptor`, whose sources deliver their events on `queue`.
    init(descriptor: Int32, queue: DispatchQueue) {
        self.descriptor = descriptor
        self.readSource = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        self.writeSource = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: queue)
        self.timer = DispatchSource.makeTimerSource(queue: queue)
    }

    /// Sets the sources' handlers and starts the timer source, which waits for a schedule.
    func start(_ handler: @escaping (ConnectionTransportEvent) -> Void) {
        self.readSource.setEventHandler { handler(.readable) }
        self.writeSource.setEventHandler { handler(.writable) }
        self.timer.setEventHandler { handler(.deadline) }
        // Both cancel handlers run on the connection's serial queue, one after the other.
        let descriptor = self.descriptor
        var pendingCancelHandlers = 2
        let cancelled = {
            pendingCancelHandlers -= 1
            if pendingCancelHandlers == 0 {
                Glibc.close(descriptor)
                handler(.closed)
            }
        }
        self.readSource.setCancelHandler(handler: cancelled)
        self.writeSource.setCancelHandler(handler: cancelled)
        self.timer.schedule(deadline: .distantFuture)
        self.timer.resume()
    }

    /// Resumes the read source.
    func resumeReading() {
        self.readSource.resume()
    }

    /// Suspends the read source.
    func suspendReading() {
        self.readSource.suspend()
    }

    /// Resumes the write source.
    func resumeWaitingForWritable() {
        self.writeSource.resume()
    }

    /// Suspends the write source.
    func suspendWaitingForWritable() {
        self.writeSource.suspend()
    }

    /// Reschedules the one timer source. Dispatch's timers run on their own clock: the
    /// deadline becomes the same distance from that clock's now (a reschedule is rare: only
    /// for a deadline earlier than the one the source already fires at).
    func scheduleTimer(at deadline: MonotonicTime) {
        let wait = max(0, deadline.nanoseconds(since: .now))
        self.timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: wait)))
    }

    /// Cancels the timer and both sources (resuming suspended ones first); the descriptor
    /// closes in the last cancel handler.
    func close(readingSuspended: Bool, waitingForWritable: Bool) {
        self.timer.cancel()
        if readingSuspended {
            self.readSource.resume()
        }
        if !waitingForWritable {
            self.writeSource.resume()
        }
        self.readSource.cancel()
        self.writeSource.cancel()
    }

    /// The monotonic clock, read without Dispatch's conversions (two calls into libdispatch
    /// each time, twice a request).
    var now: MonotonicTime { .now }

    /// Reads once through the thread's read buffer (``Socket/readThroughThreadBuffer(_:_:)``).
    func read(into input: inout ByteQueue) throws(SystemError) -> Int {
        try Socket.readThroughThreadBuffer(self.descriptor) { outcome in
            guard case .processed(let bytes) = outcome else { return -1 }
            input.append(contentsOf: bytes)
            return bytes.count
        }
    }

    /// One non-blocking `send`; `MSG_NOSIGNAL` turns a gone peer into `EPIPE` rather than a
    /// signal.
    func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("write") {
            Glibc.send(self.descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        }
    }

    /// `shutdown(SHUT_WR)`.
    func shutdownOutput() {
        shutdown(self.descriptor, Int32(SHUT_WR))
    }
}
