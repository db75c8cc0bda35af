import Foundation
import Synchronization
import Testing

@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// A burst of new transfers larger than one pass sets up (``CurlEngine/setUpsPerPass``) is
/// spread over passes, and every one of them is carried out.
struct EngineBurstTests {
    @Test func aBurstLargerThanAPassIsAllCarriedOut() throws {
        let upstream = try FakeUpstream()
        // A long idle wait: a pass that forgot the commands left over would show as a hang,
        // not as a late success.
        let engine = try CurlEngine(name: "tokenproxy.test.burst", idleWait: .seconds(60))
        let fetcher = UpstreamFetcher(engine: engine)
        let url = "http://127.0.0.1:\(upstream.port)/status/200"
        // The first answer's completion runs on the engine's thread and holds it, so that the
        // whole burst waits in the inbox and is taken in one pass.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        fetcher.fetch(.init(method: "GET", url: url, allowPlainHTTP: true)) { _ in
            held.signal()
            release.wait()
        }
        #expect(held.wait(timeout: .now() + 20) == .success)
        let burst = 3 * CurlEngine.setUpsPerPass + 5
        let statuses = Mutex<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<burst {
            fetcher.fetch(.init(method: "GET", url: url, allowPlainHTTP: true)) { result in
                statuses.withLock { $0.append((try? result.get().status) ?? 0) }
                done.signal()
            }
        }
        release.signal()
        let deadline = DispatchTime.now() + 30
        for _ in 0..<burst {
            guard done.wait(timeout: deadline) == .success else {
                Issue.record("a transfer of the burst never ended")
                break
            }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 200, count: burst))
        #expect(upstream.requests.count == burst + 1)
    }
}
