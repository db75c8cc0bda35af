import Crypto
import Foundation
import Logging
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxyMetrics
@testable import TokenProxyUpstream

/// A proxy with the libcurl forwarder in front of a ``FakeUpstream``.
final class ForwardingFixture {
    let upstream: FakeUpstream
    let proxy: TestProxy

    init(
        provider: String = #"{"grant": "static", "token": "upstream-token-1"}"#,
        route: String = "",
        limits: String = "",
        engine: (CurlEngine)? = nil,
        engines: [CurlEngine]? = nil,
        store: (any TokenStore)? = nil,
        logger: Logger = TestLogging.logger,
        upstream: FakeUpstream? = nil,
        metrics: ProxyMetrics = ProxyMetrics(),
        wrap: (CurlForwarder) -> any RouteForwarder = { $0 }
    ) throws {
        self.upstream = try upstream ?? FakeUpstream()
        let json = """
            {"providers": {"svc": \(provider)}, \(limits.isEmpty ? "" : "\"limits\": {\(limits)},")
             "routes": [
               {"name": "api", "path_prefix": "/api", "upstream": "http://127.0.0.1:\(self.upstream.port)/base",
                "provider": "svc", "allow_insecure_upstream": true \(route)},
               {"name": "open", "path_prefix": "/open", "upstream": "http://127.0.0.1:\(self.upstream.port)/base"},
               {"name": "dead", "path_prefix": "/dead", "upstream": "http://127.0.0.1:1/"}
             ]}
            """
        let configuration = TestProxy.configuration(json)
        self.proxy = try TestProxy(
            configuration,
            forwarder: wrap(
                CurlForwarder(
                    configuration: configuration,
                    engines: engines ?? [engine ?? ForwardingFixture.engine],
                    store: store,
                    metrics: metrics,
                    logger: logger
                )
            ),
            logger: logger,
            metrics: metrics
        )
    }

    /// One engine for the whole test process, as in the proxy.
    static let engine: CurlEngine = {
        do {
            return try CurlEngine(name: "tokenproxy.test.curl")
        } catch {
            preconditionFailure("the test engine cannot start: \(error)")
        }
    }()

    func client() throws -> TestClient {
        try self.proxy.client()
    }
}

/// A SHA-256 digest as lowercase hex, as the fake upstream reports bodies.
func sha256Hex(_ digest: SHA256.Digest) -> String {
    digest.map { String(format: "%02x", $0) }.joined()
}

/// An engine made with an idle wait of an hour: a command or a deadline that fails to wake
/// its thread then shows as a hang, not a delay.
func sleepyEngine(_ name: String) throws -> CurlEngine {
    try CurlEngine(name: name, idleWait: .seconds(3600))
}

/// How many times this process's thread called `name` blocked (its voluntary context
/// switches, from /proc): a thread that sleeps in `poll` and is woken once blocks once more.
func threadBlockCount(named name: String) -> Int? {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for task in tasks {
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
            let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)
        else { continue }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int(line.dropFirst("voluntary_ctxt_switches:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
    return nil
}

extension CurlEngine {
    /// Whether the event thread waits (or is about to wait) in `epoll_wait` with no
    /// command pending, so that the next command must wake it: tests wait for this rather
    /// than for a while.
    var isAsleep: Bool {
        self.inbox.withLockedValue { $0.sleeping }
    }
}

/// The user plus system CPU time of this process's thread called `name`, from /proc.
func threadCPUTime(named name: String) -> Duration? {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for task in tasks {
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
            let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // Fields after the command name; utime and stime are fields 14 and 15 of the line.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return .milliseconds((user + system) * 1000 / max(ticks, 1))
    }
    return nil
}
