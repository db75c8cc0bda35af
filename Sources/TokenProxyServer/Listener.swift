import Dispatch
import Logging
import TokenProxyConfiguration
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One listening socket whose accept loop runs on a DispatchSource.
///
/// When descriptors run short (`accept` fails with `EMFILE`, `ENFILE`, `ENOBUFS` or `ENOMEM`,
/// or the accepted descriptor lies in the reserve ``DescriptorLimit`` keeps), accepting
/// pauses for ``pauseSeconds``, as nginx does: the listening socket stays readable while
/// connections wait, so retrying at once would spin. A connection accepted into the reserve
/// is answered 503 and closed.
///
/// `@unchecked Sendable`: after `init`, the source is only resumed, suspended and cancelled
/// (thread-safe in DispatchSource), `paused` only on the listener's queue, and the address is
/// immutable.
final class Listener: @unchecked Sendable {
    /// How long accepting pauses when descriptors run short.
    static let pauseSeconds = 0.5
    /// The most pending connections answered 503 before a pause.
    static let refusalsPerPause = 256

    private let source: DispatchSourceRead
    private let descriptor: Int32
    private let queue: DispatchQueue
    /// Whether accepting is paused (the listener's queue only).
    private var paused = false
    let address: ListenAddress

    init(
        descriptor: Int32,
        address: ListenAddress,
        queue: DispatchQueue,
        onPause: @escaping @Sendable (String) -> Void = { _ in },
        onAccept: @escaping @Sendable (Int32, String) -> Void
    ) {
        self.address = address
        self.descriptor = descriptor
        self.queue = queue
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        self.source = source
        source.setEventHandler { [self] in
            // Accept everything pending; a burst of connections is one wake-up. Once the
            // reserve is reached, what is pending is answered 503 (a bounded number of them,
            // each closed at once), then accepting pauses.
            var refused = 0
            while true {
                do throws(SystemError) {
                    guard case .processed(let (client, peer)) = try Socket.accept(descriptor) else { break }
                    guard refused == 0, DescriptorLimit.admitsConnection(client) else {
                        HTTPServer.refuse(client, draining: false)
                        refused += 1
                        if refused < Self.refusalsPerPause { continue }
                        break
                    }
                    onAccept(client, peer)
                } catch {
                    if DescriptorLimit.isShortage(error.errno) {
                        self.pause()
                        onPause(error.description)
                        return
                    }
                    // ECONNABORTED and the like: try again on the next readiness event.
                    break
                }
            }
            if refused > 0 {
                self.pause()
                onPause("descriptor reserve reached; \(refused) connections answered 503")
            }
        }
        source.setCancelHandler {
            Self.release(descriptor, address)
        }
    }

    /// Stops reading the listening socket for ``pauseSeconds`` (on the listener's queue).
    private func pause() {
        guard !self.paused else { return }
        self.paused = true
        self.source.suspend()
        // The deadline thread needs no descriptor, which this pause is for the lack of.
        DeadlineScheduler.shared.schedule(at: .now + .seconds(Self.pauseSeconds)) { [self] in
            self.queue.async {
                self.paused = false
                self.source.resume()
            }
        }
    }

    private static func release(_ descriptor: Int32, _ address: ListenAddress) {
        Glibc.close(descriptor)
        if case .unix(let path) = address {
            unlink(path)
        }
    }

    func start() {
        self.source.resume()
    }

    /// Stops accepting; the socket is closed once the source's cancel handler runs, then
    /// `closed` is called.
    func close(then closed: (@Sendable () -> Void)? = nil) {
        let descriptor = self.descriptor
        let address = self.address
        self.source.setCancelHandler {
            Self.release(descriptor, address)
            closed?()
        }
        self.source.cancel()
    }
}
