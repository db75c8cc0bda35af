import TokenProxySupport

/// The byte stream under an ``HTTPConnection`` and the events it reports: reading and
/// writing without blocking, readiness, one timer for the deadlines and its clock, the
/// half-close and the close.
///
/// The connection is generic over its transport, so the production one (``SocketTransport``:
/// a descriptor and its Dispatch sources) is specialized into it and costs no indirection; a
/// test can put an in-memory stream under the same connection and drive its bytes, its
/// readiness and its clock by hand.
///
/// Every method is called holding the connection's context. Events are reported through the
/// handler given to ``start(_:)`` and never from inside one of these methods: a readiness
/// change takes effect when the transport next reports, as Dispatch sources do. The type
/// itself is `SendableMetatype` so that a connection can hand itself to its own queue.
protocol ConnectionTransport: SendableMetatype {
    /// Starts reporting events to `handler`. Until ``close(readingSuspended:waitingForWritable:)``
    /// has run and ``ConnectionTransportEvent/closed`` was reported, the transport keeps
    /// `handler`, and with it the connection, alive.
    func start(_ handler: @escaping (ConnectionTransportEvent) -> Void)

    /// The current instant on the clock the deadlines are measured on.
    var now: MonotonicTime { get }

    /// Reads once, appending what arrived to `input`: the byte count, 0 at the end of input,
    /// -1 when nothing can be read now. A reset or another failure throws.
    func read(into input: inout ByteQueue) throws(SystemError) -> Int

    /// Writes what the peer takes now of `bytes` without blocking.
    func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int>

    /// Ends the output (a FIN), keeping the input open: the lingering close.
    func shutdownOutput()

    /// Reports ``ConnectionTransportEvent/readable`` while input (or its end) waits.
    func resumeReading()

    /// Stops reporting readability.
    func suspendReading()

    /// Reports ``ConnectionTransportEvent/writable`` while the peer takes bytes.
    func resumeWaitingForWritable()

    /// Stops reporting writability.
    func suspendWaitingForWritable()

    /// Makes the timer report ``ConnectionTransportEvent/deadline`` once at `deadline`,
    /// replacing any earlier schedule.
    func scheduleTimer(at deadline: MonotonicTime)

    /// Stops every event and releases the stream; ``ConnectionTransportEvent/closed`` is
    /// reported once that is done. The flags say which readiness reports are suspended now.
    func close(readingSuspended: Bool, waitingForWritable: Bool)
}

/// What a ``ConnectionTransport`` reports to its connection.
enum ConnectionTransportEvent: Sendable, Equatable {
    /// Input, its end or a failure waits to be read.
    case readable
    /// The peer takes bytes again.
    case writable
    /// The timer reached the instant it was scheduled to.
    case deadline
    /// The stream is released after ``ConnectionTransport/close(readingSuspended:waitingForWritable:)``.
    case closed
}
