import Crypto
import Foundation
import Logging
import Synchronization
import Testing
import TokenProxySupport

struct EngineWakeUpTests {
    /// The event thread wakes only for the first command after it went to sleep. A command that
    /// arrived without a wake-up would leave its request unanswered and the client's read
    /// would time out.
    @Test
    func requestsFromManyConnectionsAtOnceAreAllAnswered() throws {
        let engine = try sleepyEngine("tokenproxy.test.wakeup")
        let fixture = try ForwardingFixture(engine: engine)
        let answered = Mutex(0)
        let failures = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let connections = 8
        let perConnection = 40
        let port = fixture.proxy.port
        for connection in 0..<connections {
            Thread.detachNewThread {
                defer { done.signal() }
                do {
                    let client = try TestClient(port: port)
                    for request in 0..<perConnection {
                        // Short pauses let the engine fall asleep between some requests.
                        if request % 8 == 0 { usleep(2000) }
                        try client.send("GET /api/c\(connection)/r\(request) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        let response = try client.readResponse()
                        guard response.status == 200,
                            response.header("X-Seen-Target") == "/base/c\(connection)/r\(request)"
                        else {
                            failures.withLockedValue { $0.append("c\(connection) r\(request): \(response.status)") }
                            return
                        }
                        answered.withLockedValue { $0 += 1 }
                    }
                } catch {
                    failures.withLockedValue { $0.append("c\(connection): \(error)") }
                }
            }
        }
        for _ in 0..<connections {
            done.wait()
        }
        #expect(failures.withLockedValue { $0 } == [])
        #expect(answered.withLockedValue { $0 } == connections * perConnection)
    }
}
