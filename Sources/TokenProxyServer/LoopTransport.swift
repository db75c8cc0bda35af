import Dispatch
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A ``ConnectionTransport`` whose client socket is watched in an ``EventLoop``'s epoll set
/// instead of by Dispatch sources of its own: the loop takes every ready socket in one batch
/// per wake-up, the loop's upstream engine's sockets included, on the loop's queue. The
/// deadlines use a Dispatch timer source on that queue, as ``SocketTransport``'s do.
///
/// The descriptor leaves the epoll set before it is closed, and is closed in the timer's
/// cancel handler, which also reports ``ConnectionTransportEvent/closed``: never from inside
/// ``close(readingSuspended:waitingForWritable:)``.
struct LoopTransport: SocketDescriptorTransport {
    /// What the connection wants reported, and whether the socket is in the epoll set (loop
    /// queue only).
    private final class Interest {
        var reading = false
        var writing = false
        var watched = false
    }

    /// The client socket.
    let descriptor: Int32
    private let loop: EventLoop
    private let timer: DispatchSourceTimer
    private let interest = Interest()

    /// Wraps `descriptor`, watched in `loop`; every method runs on the loop's queue.
    init(descriptor: Int32, loop: EventLoop) {
        self.descriptor = descriptor
        self.loop = loop
        self.timer = DispatchSource.makeTimerSource(queue: loop.queue)
    }

    /// Registers the socket with the loop and starts the timer source, which waits for a
    /// schedule. A failure or hang-up is reported as whichever readiness is asked for: the
    /// read or write that follows finds it.
    func start(_ handler: @escaping (ConnectionTransportEvent) -> Void) {
        let interest = self.interest
        self.loop.register(self.descriptor) { readiness in
            if interest.reading, !readiness.isDisjoint(with: [.readable, .failed]) {
                handler(.readable)
            }
            if interest.writing, !readiness.isDisjoint(with: [.writable, .failed]) {
                handler(.writable)
            }
        }
        self.timer.setEventHandler { handler(.deadline) }
        let descriptor = self.descriptor
        self.timer.setCancelHandler {
            Glibc.close(descriptor)
            handler(.closed)
        }
        self.timer.schedule(deadline: .distantFuture)
        self.timer.resume()
    }

    /// Reports readability from the next batch on.
    func resumeReading() {
        self.interest.reading = true
        self.updateInterest()
    }

    /// Stops reporting readability.
    func suspendReading() {
        self.interest.reading = false
        self.updateInterest()
    }

    /// Reports writability from the next batch on.
    func resumeWaitingForWritable() {
        self.interest.writing = true
        self.updateInterest()
    }

    /// Stops reporting writability.
    func suspendWaitingForWritable() {
        self.interest.writing = false
        self.updateInterest()
    }

    /// Reschedules the one timer source.
    func scheduleTimer(at deadline: DispatchTime) {
        self.timer.schedule(deadline: deadline)
    }

    /// Takes the socket out of the loop, then cancels the timer, whose cancel handler closes
    /// the descriptor.
    func close(readingSuspended: Bool, waitingForWritable: Bool) {
        self.interest.reading = false
        self.interest.writing = false
        self.loop.forget(self.descriptor, watched: self.interest.watched)
        self.interest.watched = false
        self.timer.cancel()
    }

    private func updateInterest() {
        let interest = self.interest
        self.loop.watch(
            self.descriptor,
            readable: interest.reading,
            writable: interest.writing,
            watched: interest.watched
        )
        interest.watched = interest.reading || interest.writing
    }
}
