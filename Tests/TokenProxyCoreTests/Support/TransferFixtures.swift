@testable import TokenProxyHTTP
@testable import TokenProxyUpstream

/// A sink that takes nothing: for transfers a test drives by hand, or only needs to name.
final class DroppingSink: CurlResponseSink {
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {}
    func resumeRequestBody() {}
}

extension CurlTransfer {
    /// A transfer to a closed local port that `engine` was not given.
    static func unstarted(
        method: String = "GET",
        sink: any CurlResponseSink = DroppingSink(),
        engine: CurlEngine = ForwardingFixture.engine
    ) -> CurlTransfer {
        CurlTransfer(
            engine: engine,
            request: UpstreamRequest(method: method, url: "http://127.0.0.1:1/x", headers: HTTPHeaders(), body: .none),
            options: CurlTransfer.Options(
                allowPlainHTTP: true,
                caFile: nil,
                clientCertificate: nil,
                clientKeyPEM: nil,
                connectTimeout: 1,
                firstByteTimeout: 1
            ),
            sink: sink,
            route: nil,
            provider: nil
        )
    }
}
