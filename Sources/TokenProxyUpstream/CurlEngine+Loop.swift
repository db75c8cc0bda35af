import CCurl
import TokenProxySupport

/// The turns of an engine on an ``EventLoop`` (``CurlEngine/init(loop:)``), run on the loop's
/// queue by its ``CurlEventLoop``.
extension CurlEngine {
    /// One turn of an engine on an event loop (on its queue): `first` (libcurl's ready sockets,
    /// its timer, a command), then the commands made meanwhile, libcurl's timer when due at
    /// once, the finished transfers, the passed deadlines and the answers, round again until
    /// nothing is left; then the loop's timer is set for what is due next.
    func drive(_ loop: CurlEventLoop, _ first: () -> Void) {
        loop.driving = true
        first()
        var pending: [Command] = []
        while true {
            loop.takeCommands(into: &pending)
            for command in pending {
                self.apply(command)
            }
            pending.removeAll(keepingCapacity: true)
            loop.runDueTimeout(self.multi)
            self.collectFinished()
            let now = ContinuousClock.now
            if let earliest = self.earliestDeadline, earliest <= now {
                self.expireDeadlines(now: now)
            }
            // Answers run client code in place, which may make commands: they wait in the
            // loop for the next round.
            let outboxes = self.outboxes
            self.outboxes.removeAll(keepingCapacity: true)
            for transfer in outboxes {
                transfer.deliverOutbox()
            }
            if !loop.hasWork && self.outboxes.isEmpty { break }
        }
        loop.driving = false
        loop.arm(deadline: self.earliestDeadline)
    }

    /// Hands ready sockets, with their `CURL_CSELECT_*` flags, to libcurl (loop queue).
    func socketsReady(_ ready: [(Int32, Int32)]) {
        var running: Int32 = 0
        for (descriptor, flags) in ready {
            curl_multi_socket_action(self.multi, descriptor, flags, &running)
        }
    }

    /// `count` new engines (at least one) on event loops of their own, whose serial queues
    /// are named `tp-loop-N` (``eventLoop``).
    package static func makeLoops(count: Int) throws(SystemError) -> [CurlEngine] {
        var engines: [CurlEngine] = []
        for index in 0..<max(1, count) {
            engines.append(try CurlEngine(loop: try EventLoop(label: "tp-loop-\(index)")))
        }
        return engines
    }
}
