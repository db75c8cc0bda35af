import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

struct ExchangeLifetimeTests {
    @Test func finishedExchangesAreFreedDespiteCallbacksThatCaptureThem() throws {
        let handler = CapturingHandler()
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        for _ in 0..<20 {
            try client.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi")
            #expect(try client.readResponse().status == 200)
        }
        #expect(handler.handled == 20)
        #expect(eventually { handler.alive == 0 })
    }
}
