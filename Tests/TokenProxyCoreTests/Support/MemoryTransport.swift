import Testing

@testable import TokenProxyServer
@testable import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// A ``ConnectionTransport`` in memory, for driving an ``HTTPConnection`` without a socket
/// (as NIO's `EmbeddedChannel` drives a pipeline): the client's bytes, its end of input or
/// reset, how much of the answer it takes, and a clock that moves only when told.
///
/// Confined to the connection's context like the connection itself; ``EmbeddedConnection``
/// holds the context whenever it touches it. Events are not reported from inside the
/// transport's methods but by ``nextEvent()``, which the driver asks until nothing is left,
/// so that readiness changes take effect later, as they do with Dispatch sources.
final class MemoryTransport: ConnectionTransport {
    /// Bytes the client sent that the connection has not read yet.
    var inbound: [UInt8] = []
    /// The client ended its output (a FIN): reads return 0 once `inbound` is empty.
    var inputEnded = false
    /// The client reset the connection: reads and writes fail with `ECONNRESET`.
    var isReset = false
    /// At most this many bytes are handed to the connection per read.
    var readSize = 65536
    /// Bytes the connection wrote that the test has not taken yet.
    var written: [UInt8] = []
    /// How many writes took bytes.
    private(set) var writes = 0
    /// How many more bytes the client takes before writes would block; nil for no limit.
    var receiveWindow: Int?
    /// The connection ended its output (the lingering close's FIN).
    private(set) var outputEnded = false
    /// Whether readability is reported (the connection wants to read).
    private(set) var isReading = false
    /// Whether writability is reported (the connection waits to write).
    private(set) var isWaitingForWritable = false
    /// The instant the timer fires at, if scheduled.
    private(set) var timerFire: MonotonicTime?
    /// The manual clock.
    var clock = MonotonicTime(nanoseconds: 1_000_000_000_000)
    /// The connection closed the transport.
    private(set) var isClosed = false
    /// ``ConnectionTransportEvent/closed`` was reported.
    private(set) var closeReported = false
    /// Every event reported, in order, for tests that look at the sequence.
    private(set) var reported: [ConnectionTransportEvent] = []
    private var handler: ((ConnectionTransportEvent) -> Void)?

    func start(_ handler: @escaping (ConnectionTransportEvent) -> Void) {
        self.handler = handler
    }

    var now: MonotonicTime { self.clock }

    func read(into input: inout ByteQueue) throws(SystemError) -> Int {
        if self.isReset {
            throw SystemError(call: "read", errno: ECONNRESET)
        }
        guard !self.inbound.isEmpty else { return self.inputEnded ? 0 : -1 }
        let count = min(self.readSize, self.inbound.count)
        input.append(contentsOf: self.inbound[..<count])
        self.inbound.removeFirst(count)
        return count
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        if self.isReset {
            throw SystemError(call: "write", errno: ECONNRESET)
        }
        if self.outputEnded {
            throw SystemError(call: "write", errno: EPIPE)
        }
        let count = min(bytes.count, self.receiveWindow ?? bytes.count)
        guard count > 0 || bytes.isEmpty else { return .wouldBlock }
        self.written.append(contentsOf: bytes.prefix(count))
        self.writes += 1
        self.receiveWindow = self.receiveWindow.map { $0 - count }
        return .processed(count)
    }

    func shutdownOutput() {
        self.outputEnded = true
    }

    func resumeReading() {
        #expect(!self.isReading, "reading resumed twice")
        self.isReading = true
    }

    func suspendReading() {
        #expect(self.isReading, "reading suspended twice")
        self.isReading = false
    }

    func resumeWaitingForWritable() {
        #expect(!self.isWaitingForWritable, "waiting for writable resumed twice")
        self.isWaitingForWritable = true
    }

    func suspendWaitingForWritable() {
        #expect(self.isWaitingForWritable, "waiting for writable suspended twice")
        self.isWaitingForWritable = false
    }

    func scheduleTimer(at deadline: MonotonicTime) {
        self.timerFire = deadline
    }

    func close(readingSuspended: Bool, waitingForWritable: Bool) {
        #expect(!self.isClosed, "closed twice")
        #expect(readingSuspended == !self.isReading)
        #expect(waitingForWritable == self.isWaitingForWritable)
        self.isClosed = true
        self.isReading = false
        self.isWaitingForWritable = false
        self.timerFire = nil
    }

    /// Reports the next due event to the connection; false when none is due. Level-triggered
    /// like Dispatch's sources: readable while input (or its end, or a reset) waits,
    /// writable while the client takes bytes; the timer once at its instant.
    func reportNextEvent() -> Bool {
        guard let handler = self.handler, let event = self.nextEvent() else { return false }
        self.reported.append(event)
        if event == .closed {
            // Released as a socket's sources release the connection once cancelled.
            self.handler = nil
        }
        handler(event)
        return true
    }

    private func nextEvent() -> ConnectionTransportEvent? {
        if self.isClosed {
            guard !self.closeReported else { return nil }
            self.closeReported = true
            return .closed
        }
        if self.isReading, !self.inbound.isEmpty || self.inputEnded || self.isReset {
            return .readable
        }
        if self.isWaitingForWritable, self.receiveWindow != 0 || self.isReset {
            return .writable
        }
        if let fire = self.timerFire, fire <= self.clock {
            self.timerFire = nil
            return .deadline
        }
        return nil
    }
}
