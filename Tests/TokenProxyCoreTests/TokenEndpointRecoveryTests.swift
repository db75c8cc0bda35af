import Foundation
import Synchronization
import Testing
import TokenProxySupport

/// A token endpoint that goes silent in the middle of an answer costs a bounded time, and
/// the proxy recovers as soon as it answers again (`docs/reference/security.md`, "Hostile
/// timing"): the answer's idle limit (`limits.endpoint_idle_seconds`, 5 s) ends the stalled
/// attempt as a transient failure and the token request asks again, so the provider is not
/// held for the token request's whole life; a `tokenproxy token` sharing the file store is
/// not held on the provider's lock either. A reload that changes the provider abandons its
/// stalled token request at once, and the requests waiting on it get the new provider's token.
@Suite(.serialized) struct TokenEndpointRecoveryTests {
    /// How each stall looks on the wire: no head; a head and a few body bytes; a head and a
    /// body that drips, then stops.
    static let stalls: [PeerFault] = [
        PeerFault(name: "hang before head", fault: .hangBeforeHead, stalls: true),
        PeerFault(name: "head then silence", fault: .headThenSilence, stalls: true),
        PeerFault(name: "drip then stop", fault: .slowDrip(bytesPerSecond: 20, stopAfter: 10), stalls: true),
    ]

    /// Limits with the default idle limit and token request life (30 s), and a short wait.
    private static let limits = #""token_wait_seconds": 3"#

    private func start(_ peers: FaultPeers, store: ScriptDirectory, limits: String = Self.limits) throws
        -> TokenProxyProcess
    {
        let extra = #""token_store": {"path": "\#(store.path("state/tokens.json"))"},"#
        return try TokenProxyProcess(configuration: peers.configuration(limits: limits, extra: extra))
    }

    /// The first 200 for `/api/echo` and how long after `since` it came, trying until
    /// `within` has passed (nil when none came).
    private func firstSuccess(_ proxy: TokenProxyProcess, since: ContinuousClock.Instant, within: Duration)
        -> Duration?
    {
        while ContinuousClock.now - since < within {
            if (try? TestClient.outcome(port: proxy.port, target: "/api/echo", timeout: 20)) == .answered(200) {
                return ContinuousClock.now - since
            }
            usleep(200_000)
        }
        return nil
    }

    /// The endpoint stalls while a request waits (502 at `token_wait_seconds`), then heals:
    /// a request gets 200 within `token_wait_seconds` + 5 s of the healing, where before
    /// the stalled attempt held the provider for the token request's whole life.
    @Test(arguments: Self.stalls)
    func aStalledAnswerEndsAtTheIdleLimitAndTheEndpointIsAskedAgain(stall: PeerFault) throws {
        let peers = try FaultPeers(tokenEndpoint: stall.fault)
        let store = try ScriptDirectory()
        let proxy = try self.start(peers, store: store)
        #expect(try TestClient.outcome(port: proxy.port, target: "/api/echo") == .answered(502, "token_unavailable"))
        #expect(peers.tokenEndpoint.requests == 1)

        peers.tokenEndpoint.fault = .token("healed")
        let healed = ContinuousClock.now
        let took = self.firstSuccess(proxy, since: healed, within: .seconds(20))
        #expect(took != nil)
        #expect((took ?? .seconds(99)) < .seconds(3 + 5), "first 200 after \(String(describing: took))")
        #expect(peers.healthy.requests.last?.headers.first("Authorization") == "Bearer healed")
        // The stalled attempt's connection was closed by the proxy: nothing of it is left.
        #expect(eventually { peers.tokenEndpoint.threads == 1 })
    }

    /// `tokenproxy token` sharing the file store, started when the endpoint heals, is not held
    /// on the provider's lock by the stalled token request of the running proxy: it prints
    /// the token within 12 s.
    @Test func theTokenCommandIsNotHeldByAStalledTokenRequest() throws {
        let peers = try FaultPeers(tokenEndpoint: .headThenSilence)
        let store = try ScriptDirectory()
        let proxy = try self.start(peers, store: store)
        #expect(try TestClient.outcome(port: proxy.port, target: "/api/echo") == .answered(502, "token_unavailable"))

        peers.tokenEndpoint.fault = .token("healed")
        let started = ContinuousClock.now
        let result = try TokenProxyBinary.run(["token", "svc", "--config", proxy.configurationPath])
        let took = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .newlines) == "healed")
        #expect(took < .seconds(12), "took \(took)")
    }

    /// An endpoint that never answers, and an idle limit and token request life too long to
    /// end it (60 s): a reload pointing the provider at a working endpoint abandons the
    /// stalled token request (its connection closed, its store lock released), and the
    /// request that was waiting on it gets the new provider's token, as do later ones.
    @Test func aReloadAbandonsTheStalledTokenRequestAndHandsOverItsWaiters() throws {
        let peers = try FaultPeers(tokenEndpoint: .hangBeforeHead)
        let working = try FaultServer(.token("reloaded"))
        let store = try ScriptDirectory()
        let limits = #""token_wait_seconds": 20, "token_request_seconds": 60, "endpoint_idle_seconds": 60"#
        let proxy = try self.start(peers, store: store, limits: limits)

        let waiting = Mutex<ClientOutcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        let port = proxy.port
        Thread {
            let outcome = try? TestClient.outcome(port: port, target: "/api/echo", timeout: 30)
            waiting.withLockedValue { $0 = outcome }
            done.signal()
        }.start()
        #expect(eventually { peers.tokenEndpoint.requests == 1 })

        let extra = #""token_store": {"path": "\#(store.path("state/tokens.json"))"},"#
        let reloaded = peers.configuration(limits: limits, extra: extra)
            .replacingOccurrences(of: peers.tokenEndpoint.url("/token"), with: working.url("/token"))
        #expect(try proxy.reload(reloaded))

        #expect(done.wait(timeout: .now() + 25) == .success)
        #expect(waiting.withLockedValue { $0 } == .answered(200), "\(proxy.output.raw.suffix(3000))")
        #expect(try TestClient.outcome(port: proxy.port, target: "/api/echo") == .answered(200))
        #expect(working.requests == 1)
        #expect(peers.healthy.requests.last?.headers.first("Authorization") == "Bearer reloaded")
        // The abandoned request's connection is closed: the stalled endpoint holds nothing.
        #expect(eventually { peers.tokenEndpoint.threads == 1 })
    }
}
