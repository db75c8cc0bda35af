import Foundation
import Testing

/// Where a fault is put, and the route whose requests meet it.
enum FaultSide: String, Sendable, CustomTestStringConvertible {
    case tokenEndpoint = "token endpoint"
    case upstream

    /// The side's name, for the test output.
    var testDescription: String { self.rawValue }

    /// A target of the route that meets this side's fault.
    var target: String { self == .tokenEndpoint ? "/api/echo" : "/up/x" }

    /// The fault server on this side.
    func server(of peers: FaultPeers) -> FaultServer {
        self == .tokenEndpoint ? peers.tokenEndpoint : peers.upstream
    }
}

/// A way for 300 clients to give up on their exchanges.
struct Abandonment: Sendable, CustomTestStringConvertible {
    /// What the clients give up on, for the test output.
    var testDescription: String
    /// Where the fault is.
    var side: FaultSide
    /// What holds the exchanges.
    var fault: FaultServer.Fault
    /// Whether each client reads the response head before it closes.
    var readsHead: Bool

    /// A hanging token request, a hanging upstream, and an upstream body that stalls.
    static let all: [Abandonment] = [
        .init(testDescription: "token endpoint hangs", side: .tokenEndpoint, fault: .hangBeforeHead, readsHead: false),
        .init(testDescription: "upstream hangs", side: .upstream, fault: .hangBeforeHead, readsHead: false),
        .init(testDescription: "upstream body stalls", side: .upstream, fault: .headThenSilence, readsHead: true),
    ]
}

extension LivenessFaultTests {
    /// The same faults against `tokenproxy serve` as a process of its own, whose open
    /// descriptors can be counted: a failed exchange frees everything it held, whether its
    /// deadline ended it or its client went away (`docs/reference/security.md`, "A client of the proxy").
    @Suite struct Descriptors {
        /// A proxy process in front of `peers` whose token endpoint and upstream have been
        /// used once, with its settled descriptor count.
        private func warmProxy(_ peers: FaultPeers, limits: String) throws -> (TokenProxyProcess, Int) {
            let proxy = try TokenProxyProcess(
                configuration: peers.configuration(limits: limits, extra: #""token_store": "memory","#)
            )
            // The token stays unknown, so that a token endpoint fault is met.
            #expect(try TestClient.outcome(port: proxy.port, target: "/up/x") == .answered(200))
            #expect(try TestClient.outcome(port: proxy.port, target: "/open/echo") == .answered(200))
            #expect(proxy.isHealthy)
            return (proxy, try #require(proxy.settledDescriptors()))
        }

        /// The faults of each side met by a burst: those that hold an exchange until a
        /// deadline, and those that end it at once.
        static let bursts: [(FaultSide, PeerFault)] =
            PeerFault.tokenEndpoint.filter { ["refuse", "hang before head"].contains($0.name) }
            .map { (.tokenEndpoint, $0) }
            + PeerFault.upstream.filter {
                ["hang before head", "head then silence", "reset mid-body", "garbage"].contains($0.name)
            }.map { (.upstream, $0) }

        /// 200 requests meet the fault at once while `healthz` answers; afterwards the
        /// process holds no more descriptors than before, give or take libcurl's cache.
        @Test(arguments: Self.bursts)
        func aBurstAgainstAFaultLeavesNoDescriptorBehind(side: FaultSide, fault: PeerFault) throws {
            let peers = try FaultPeers()
            let (proxy, baseline) = try self.warmProxy(peers, limits: FaultPeers.quickLimits())
            side.server(of: peers).fault = fault.fault

            var healthyDuring = false
            var counted = !fault.stalls
            let answers = try TestClient.concurrentGets(port: proxy.port, count: 200, target: side.target) {
                healthyDuring = proxy.isHealthy
                // The count sees the burst while a stall holds its exchanges (the proxy may
                // close a connection as soon as it has answered it).
                counted = counted || eventually { proxy.descriptors >= baseline + 100 }
            }
            #expect(healthyDuring)
            #expect(counted, "\(proxy.descriptors) open, \(baseline) before")
            #expect(answers.filter { $0 != fault.expected }.isEmpty, "\(answers.filter { $0 != fault.expected })")

            // Libcurl may keep a few upstream connections: a small slack over the baseline.
            #expect(eventually { proxy.descriptors <= baseline + 4 }, "\(proxy.descriptors) open, \(baseline) before")
            #expect(proxy.isHealthy)
            #expect(proxy.process.isRunning)
        }

        /// Clients that give up keep no slot: with deadlines far away, only their going away
        /// can free the 200 connections `max_connections` allows, and an unrelated route
        /// answers again once it has.
        @Test(arguments: Abandonment.all)
        func clientsThatGiveUpFreeTheirSlots(abandonment: Abandonment) throws {
            let peers = try FaultPeers()
            let (proxy, baseline) = try self.warmProxy(
                peers,
                limits: FaultPeers.patientLimits + #", "max_connections": 200"#
            )
            abandonment.side.server(of: peers).fault = abandonment.fault

            var clients: [TestClient] = []
            for _ in 0..<300 {
                let client = try TestClient(port: proxy.port, timeout: 15)
                try? client.send("GET \(abandonment.side.target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                clients.append(client)
            }
            if abandonment.readsHead {
                // Those beyond `max_connections` are refused with 503 (or reset before they read it).
                let heads = clients.compactMap { try? $0.readHead().status }
                #expect(heads.contains(200))
                #expect(heads.allSatisfy { $0 == 200 || $0 == 503 }, "\(heads)")
            } else {
                // Every exchange has begun: the proxy is full.
                #expect(
                    eventually {
                        (try? TestClient.outcome(port: proxy.port, target: "/open/echo"))?.error
                            == "too_many_connections"
                    }
                )
            }
            clients.forEach { $0.closeNow() }

            #expect(eventually { (try? TestClient.outcome(port: proxy.port, target: "/open/echo")) == .answered(200) })
            #expect(eventually { proxy.descriptors <= baseline + 4 }, "\(proxy.descriptors) open, \(baseline) before")
            #expect(proxy.isHealthy)
        }
    }
}
