import Foundation
import Logging
import TokenProxyConfiguration
import TokenProxyForwarding
import TokenProxyServer
import TokenProxyUpstream

/// Everything `tokenproxy demo` runs on this machine: the demo authorization server and
/// upstream on ephemeral loopback ports, and the proxy in front with a `client_credentials`
/// provider for them. Nothing leaves the machine.
package final class DemoEnvironment: Sendable {
    /// The proxy.
    package let service: ProxyService
    /// The demo authorization server.
    package let authorization: DemoAuthorizationServer
    /// Where the proxy listens.
    let proxyAddress: ListenAddress
    /// The upstream's port, to show that it refuses requests without a token.
    let upstreamPort: UInt16
    private let servers: [HTTPServer]

    /// Starts the demo with the proxy on `listen`.
    package static func start(listen: ListenAddress, logger: Logger) throws -> DemoEnvironment {
        let authorization = DemoAuthorizationServer()
        let settings = ConnectionSettings()
        let authServer = HTTPServer(settings: settings, maxConnections: 256, handler: authorization, logger: logger)
        let upstreamServer = HTTPServer(
            settings: settings,
            maxConnections: 256,
            handler: DemoUpstream(authorization: authorization),
            logger: logger
        )
        guard case .inet(_, let authPort) = try authServer.bind(.inet(host: "127.0.0.1", port: 0)),
            case .inet(_, let upstreamPort) = try upstreamServer.bind(.inet(host: "127.0.0.1", port: 0))
        else {
            throw ConfigurationError(path: "demo", message: "cannot start the demo servers")
        }
        let json = """
            {
              "listen": "\(listen)",
              "token_store": "memory",
              "providers": {
                "demo": {
                  "grant": "client_credentials",
                  "token_url": "http://127.0.0.1:\(authPort)/token",
                  "allow_insecure_endpoints": true,
                  "client_id": "\(authorization.clientID)",
                  "client_secret": "\(authorization.clientSecret)",
                  "refresh_skew_seconds": 5
                }
              },
              "routes": [
                {"name": "demo", "path_prefix": "/demo", "upstream": "http://127.0.0.1:\(upstreamPort)",
                 "provider": "demo", "allow_insecure_upstream": true}
              ]
            }
            """
        let configuration = try ProxyConfiguration.decode(Data(json.utf8))
        let engine = try CurlEngine()
        let service = ProxyService(
            configuration: configuration,
            forwarder: CurlForwarder(configuration: configuration, engine: engine, logger: logger),
            logger: logger
        )
        let bound = try service.start()
        return DemoEnvironment(
            service: service,
            authorization: authorization,
            proxyAddress: bound.proxy,
            upstreamPort: upstreamPort,
            servers: [authServer, upstreamServer]
        )
    }

    private init(
        service: ProxyService,
        authorization: DemoAuthorizationServer,
        proxyAddress: ListenAddress,
        upstreamPort: UInt16,
        servers: [HTTPServer]
    ) {
        self.service = service
        self.authorization = authorization
        self.proxyAddress = proxyAddress
        self.upstreamPort = upstreamPort
        self.servers = servers
    }

    /// What to try, for people.
    package var instructions: String {
        let proxy = "http://\(self.proxyAddress)"
        let tries = [
            ("curl -i http://127.0.0.1:\(self.upstreamPort)/hello", "the API alone: 401, no token"),
            ("curl -i \(proxy)/demo/hello", "through tokenproxy: 200"),
            ("curl -s -X POST -d 'x=1' \(proxy)/demo/items", "bodies are forwarded too"),
            ("curl -s \(proxy)/_tokenproxy/status", "routes and providers, no secrets"),
            ("curl -i \(proxy)/nothing", "404 no_route"),
        ]
        let width = tries.map(\.0.count).max() ?? 0
        let lines = tries.map { "  " + $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + "# " + $0.1 }
        return """
            tokenproxy demo is running. Everything is on this machine:
              authorization server  issues tokens that live \(self.authorization.lifetime) s (client_credentials)
              upstream API          http://127.0.0.1:\(self.upstreamPort)  (answers only with a valid token)
              tokenproxy            \(proxy)  (route /demo -> the upstream, provider "demo")

            Try:
            \(lines.joined(separator: "\n"))

            Tokens expire every \(self.authorization.lifetime) s; tokenproxy renews them by itself
            ("tokens_issued_so_far" in the answers counts them). Stop with Ctrl-C.

            """
    }

    /// Stops the proxy and the demo servers.
    package func stop(completion: @escaping @Sendable () -> Void) {
        for server in self.servers {
            server.closeListeners()
        }
        self.service.drain(timeout: 2) { _ in completion() }
    }
}
