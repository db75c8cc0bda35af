import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxyMetrics

/// Certificate-bound tokens against a real server (RFC 8705): Glewlwyd authenticates the
/// `tls_client_auth` client by the certificate it presents and binds the token to it
/// (`cnf.x5t#S256`). The upstream, `Tests/Interop/mtls_resource.py`, answers only when the
/// certificate presented on the connection is the one the token is bound to.
@Suite(.serialized)
struct GlewlwydMutualTLSTests {
    final class Setup {
        let server: GlewlwydServer
        let resource: InteropServer
        let directory: URL
        let metrics = ProxyMetrics()
        let logs = CapturedLogs()
        var proxy: TestProxy?

        init() throws {
            let server = try GlewlwydServer()
            self.server = server
            self.resource = try InteropServer(
                script: "mtls_resource.py",
                arguments: [
                    "--cert", server.string("server_cert_file"), "--key", server.string("server_key_file"), "--ca",
                    server.string("ca_file"),
                ]
            )
            // The proxy's own copies, mode 0600, so that a test can rotate them.
            self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("mtls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
            try self.install(
                certificate: server.client("mtls", "cert_file"),
                key: server.client("mtls", "key_file")
            )
        }

        deinit {
            try? FileManager.default.removeItem(at: self.directory)
        }

        var certificatePath: String { self.directory.appendingPathComponent("client.crt").path }
        var keyPath: String { self.directory.appendingPathComponent("client.key").path }

        /// Puts `certificate` and `key` where the proxy reads them, each replaced at once
        /// (written beside, then renamed), as a secret mount swaps them.
        func install(certificate: String, key: String) throws {
            for (source, target) in [(certificate, self.certificatePath), (key, self.keyPath)] {
                let staged = target + ".new"
                try? FileManager.default.removeItem(atPath: staged)
                try FileManager.default.copyItem(atPath: source, toPath: staged)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: staged)
                _ = rename(staged, target)
            }
        }

        /// Issues a new certificate with the registered subject and a new key, signed by the
        /// fixture's CA: what a rotation brings.
        func rotate() throws {
            let certs = URL(fileURLWithPath: self.server.string("ca_file")).deletingLastPathComponent().path
            let key = self.directory.appendingPathComponent("rotated.key").path
            let request = self.directory.appendingPathComponent("rotated.csr").path
            let certificate = self.directory.appendingPathComponent("rotated.crt").path
            let extensions = self.directory.appendingPathComponent("rotated.ext").path
            try "extendedKeyUsage=clientAuth\n".write(toFile: extensions, atomically: true, encoding: .utf8)
            for argv in [
                ["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key],
                [
                    "openssl", "req", "-new", "-key", key, "-subj", "/O=tokenproxy/CN=tokenproxy-mtls-client", "-out",
                    request,
                ],
                [
                    "openssl", "x509", "-req", "-in", request, "-CA", certs + "/ca.crt", "-CAkey", certs + "/ca.key",
                    "-CAcreateserial", "-days", "2", "-extfile", extensions, "-out", certificate,
                ],
            ] {
                let output = try CommandRunner.run(argv, timeout: 30)
                guard output.status == 0 else {
                    throw TestFailure(message: "\(argv[1]) failed: \(output.stderr)")
                }
            }
            try self.install(certificate: certificate, key: key)
        }

        func start(route extra: String = "") throws {
            let server = self.server
            let json = """
                {"providers": {"bank": {"grant": "client_credentials", "issuer": "\(server.string("issuer"))",
                   "client_id": "\(server.client("mtls", "client_id"))", "client_auth": "tls_client_auth",
                   "client_cert": {"file": "\(self.certificatePath)"}, "client_key": {"file": "\(self.keyPath)"},
                   "scopes": ["tokenproxy.read"], "ca_file": "\(server.string("ca_file"))"}},
                 "routes": [{"name": "bank", "path_prefix": "/bank", "upstream": "https://127.0.0.1:\(self.resource.port)",
                             "provider": "bank", "ca_file": "\(server.string("ca_file"))" \(extra)}]}
                """
            self.proxy = try TestProxy.forwarding(json, logger: self.logs.logger(), metrics: self.metrics)
        }

        func get() throws -> (status: Int, presented: String?, bound: String?) {
            let client = try self.proxy?.client() ?? TestClient(port: 1)
            try client.send("GET /bank/accounts HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let answer = try client.readResponse()
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
            return (answer.status, object?["presented"] as? String, object?["bound"] as? String)
        }

        var tokenRequests: Int {
            let series = #"tokenproxy_token_requests_total{provider="bank",result="success"} "#
            let text = String(decoding: self.metrics.exposition(openConnections: 0), as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(series) }.flatMap {
                Int($0.dropFirst(series.count))
            }
                ?? 0
        }
    }

    @Test func theProvidersCertificateAuthenticatesTheClientAndReachesTheUpstream() throws {
        let setup = try Setup()
        try setup.start()
        let answer = try setup.get()
        #expect(answer.status == 200, "\(answer) \(setup.logs.text)")
        #expect(answer.presented == setup.server.client("mtls", "x5t#S256"))
        #expect(answer.bound == answer.presented)
        #expect(setup.tokenRequests == 1)
    }

    @Test func aRoutesOwnCertificateWins() throws {
        let setup = try Setup()
        let server = setup.server
        try setup.start(
            route:
                #", "client_cert": "\#(server.string("other_client_cert_file"))", "client_key": {"file": "\#(server.string("other_client_key_file"))"}"#
        )
        let answer = try setup.get()
        // The token is bound to the provider's certificate; the route presented its own.
        #expect(answer.status == 401)
        #expect(answer.presented != nil && answer.presented != setup.server.client("mtls", "x5t#S256"))
    }

    @Test func aRotatedCertificateIsUsedFromTheNextConnectionAndItsTokenRenewed() throws {
        let setup = try Setup()
        try setup.start()
        let before = try setup.get()
        #expect(before.status == 200)
        try setup.rotate()
        let after = try setup.get()
        #expect(after.status == 200, "\(after) \(setup.logs.text)")
        #expect(after.presented != nil && after.presented != before.presented)
        #expect(after.bound == after.presented)
        #expect(setup.tokenRequests == 2)
    }
}
