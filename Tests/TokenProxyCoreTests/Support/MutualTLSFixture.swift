import Crypto
import Foundation

@testable import TokenProxyCredentials
@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// An in-process token endpoint behind nginx's mutual TLS: nginx verifies the client
/// certificate against the test CA and passes `$ssl_client_verify` and
/// `$ssl_client_fingerprint` on; a token is issued only for a verified certificate, so a
/// request without one fails here as well as at nginx. Serves a discovery document too.
final class MutualTLSTokenEndpoint: HTTPExchangeHandler, @unchecked Sendable {
    struct Seen {
        var form: [String: String]
        var authorization: String?
        /// nginx's SHA-1 fingerprint of the certificate presented, `nil` without one.
        var fingerprint: String?
        var path: String
    }

    private let lock = NSLock()
    /// Each token request, in order (guarded by `lock`).
    private var seen: [Seen] = []
    /// Tokens issued so far (guarded by `lock`).
    private var issued = 0
    /// Written once in `init`, before any request can arrive.
    private var server: TestHTTPServer?
    private(set) var port: UInt16 = 0
    /// The discovery document (set by the test before the requests that read it).
    var discoveryDocument = "{}"

    init() throws {
        self.server = try TestHTTPServer(handler: self)
        self.port = self.server?.port ?? 0
    }

    var origin: String { "http://127.0.0.1:\(self.port)" }
    var requests: [Seen] { self.lock.withLock { self.seen } }

    func handle(_ exchange: HTTPExchange) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        if exchange.head.method == "GET", exchange.head.path == "/.well-known/openid-configuration" {
            exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array(self.discoveryDocument.utf8)))
            return
        }
        var body: [UInt8] = []
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                body += bytes
            case .end:
                let verified = exchange.head.headers.first("X-Client-Verify") == "SUCCESS"
                let fingerprint = exchange.head.headers.first("X-Client-Fingerprint").flatMap { $0.isEmpty ? nil : $0 }
                let number = self.lock.withLock { () -> Int in
                    self.seen.append(
                        Seen(
                            form: FakeOAuthProvider.decode(String(decoding: body, as: UTF8.self)),
                            authorization: exchange.head.headers.first("Authorization"),
                            fingerprint: fingerprint,
                            path: exchange.head.path
                        )
                    )
                    guard verified else { return 0 }
                    self.issued += 1
                    return self.issued
                }
                guard number > 0 else {
                    let refusal = #"{"error": "invalid_client", "error_description": "no client certificate"}"#
                    exchange.respond(HTTPResponse(status: 401, headers: headers, body: Array(refusal.utf8)))
                    return
                }
                let token = #"{"access_token": "bound-\#(number)", "token_type": "Bearer", "expires_in": 3600}"#
                exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array(token.utf8)))
            }
        }
    }
}

/// nginx with two mutual-TLS servers, a token endpoint in front of ``MutualTLSTokenEndpoint``
/// and an upstream answering with what it saw, plus a private directory holding the client
/// certificate and key the proxy is configured with, which ``rotate()`` replaces.
final class MutualTLSFixture {
    let endpoint: MutualTLSTokenEndpoint
    let nginx: NginxFixture
    let tokenPort: UInt16
    let upstreamPort: UInt16
    /// A private directory (mode 0700) with `client.pem` and `client.key` (mode 0600).
    let directory: URL
    private var rotations = 0

    var certificateFile: String { self.directory.appendingPathComponent("client.pem").path }
    var keyFile: String { self.directory.appendingPathComponent("client.key").path }
    var tokenURL: String { "https://127.0.0.1:\(self.tokenPort)/token" }
    var upstreamURL: String { "https://127.0.0.1:\(self.upstreamPort)" }

    init() throws {
        let endpoint = try MutualTLSTokenEndpoint()
        let tokenPort = try LoopbackSocket.freePort()
        let upstreamPort = try LoopbackSocket.freePort()
        self.endpoint = endpoint
        self.tokenPort = tokenPort
        self.upstreamPort = upstreamPort
        self.nginx = try NginxFixture { directory in
            """
            server {
              listen 127.0.0.1:\(tokenPort) ssl;
              ssl_certificate \(directory)/server.pem;
              ssl_certificate_key \(directory)/server.key;
              ssl_client_certificate \(directory)/ca.pem;
              ssl_verify_client on;
              location / {
                proxy_pass http://127.0.0.1:\(endpoint.port);
                proxy_set_header X-Client-Verify $ssl_client_verify;
                proxy_set_header X-Client-Fingerprint $ssl_client_fingerprint;
              }
            }
            server {
              listen 127.0.0.1:\(upstreamPort) ssl;
              ssl_certificate \(directory)/server.pem;
              ssl_certificate_key \(directory)/server.key;
              ssl_client_certificate \(directory)/ca.pem;
              ssl_verify_client on;
              location / {
                add_header X-Client-Fingerprint $ssl_client_fingerprint always;
                add_header X-Connection $connection always;
                add_header X-Seen-Authorization $http_authorization always;
                return 200 "mtls upstream $ssl_client_s_dn\\n";
              }
            }
            """
        }
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        chmod(self.directory.path, 0o700)
        try self.install(certificate: self.nginx.clientCertificate, key: self.nginx.clientKey)
    }

    deinit {
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// nginx's `$ssl_client_fingerprint` of the certificate in `file`: SHA-1 of its DER, hex.
    static func fingerprint(ofCertificateIn file: String) throws -> String {
        let pem = try String(contentsOfFile: file, encoding: .utf8)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else {
            throw NginxFixture.Failure(description: "\(file) holds no PEM certificate")
        }
        return Insecure.SHA1.hash(data: der).map { String(format: "%02x", $0) }.joined()
    }

    /// The fingerprint of the certificate the proxy is configured with now.
    func currentFingerprint() throws -> String {
        try Self.fingerprint(ofCertificateIn: self.certificateFile)
    }

    /// Makes a new client certificate and key signed by the test CA and puts them in place of
    /// the configured ones, each by an atomic rename, as a certificate manager does.
    func rotate() throws {
        self.rotations += 1
        let name = "client-\(self.rotations)"
        let key = self.nginx.file("\(name).key")
        let certificate = self.nginx.file("\(name).pem")
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
            self.nginx.file("\(name).csr"), "-subj", "/CN=tokenproxy-\(name)",
        ])
        try Self.openssl([
            "x509", "-req", "-in", self.nginx.file("\(name).csr"), "-CA", self.nginx.caFile, "-CAkey",
            self.nginx.file("ca.key"), "-CAcreateserial", "-out", certificate, "-days", "2", "-extfile",
            self.nginx.file("client.ext"),
        ])
        try self.install(certificate: certificate, key: key)
    }

    /// Copies `certificate` and `key` over the configured files, each through a temporary
    /// file renamed into place.
    private func install(certificate: String, key: String) throws {
        for (source, target) in [(certificate, self.certificateFile), (key, self.keyFile)] {
            let temporary = target + ".new"
            try? FileManager.default.removeItem(atPath: temporary)
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
            chmod(temporary, 0o600)
            guard rename(temporary, target) == 0 else {
                throw NginxFixture.Failure(description: "cannot rename \(temporary)")
            }
        }
    }

    private static func openssl(_ arguments: [String]) throws {
        let output = try CommandRunner.run(["openssl"] + arguments, timeout: 60)
        guard output.status == 0 else {
            throw NginxFixture.Failure(description: "openssl \(arguments.first ?? ""): \(output.stderr)")
        }
    }
}
