import Foundation

@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A real nginx from Debian serving TLS on loopback with certificates made by `openssl`:
/// a server certificate for `127.0.0.1`/`localhost` signed by a test CA, one for the wrong
/// name, a second unrelated CA, and a client certificate for mutual TLS.
final class NginxFixture {
    let directory: URL
    let tlsPort: UInt16
    let mutualTLSPort: UInt16
    let wrongNamePort: UInt16
    /// TLS with HTTP/1.1 only, answering with the values of `X-Pad-1` to `X-Pad-3` joined.
    let http1Port: UInt16
    private let process: Process

    var caFile: String { self.file("ca.pem") }
    var otherCAFile: String { self.file("other-ca.pem") }
    var clientCertificate: String { self.file("client.pem") }
    var clientKey: String { self.file("client.key") }

    func file(_ name: String) -> String {
        self.directory.appendingPathComponent(name).path
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts nginx; `extraServers` adds `server` blocks to its `http` block, given the
    /// directory that holds the certificates (`server.pem`, `server.key`, `ca.pem`).
    init(extraServers: (String) -> String = { _ in "" }) throws {
        guard let nginx = Self.executable else {
            throw Failure(description: "nginx is not installed (.ci/run installs nginx-light)")
        }
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: self.directory.appendingPathComponent("tmp"),
            withIntermediateDirectories: true
        )
        try Self.makeCertificates(in: self.directory)
        self.tlsPort = try LoopbackSocket.freePort()
        self.mutualTLSPort = try LoopbackSocket.freePort()
        self.wrongNamePort = try LoopbackSocket.freePort()
        self.http1Port = try LoopbackSocket.freePort()
        let directory = self.directory.path
        let http = """
              server {
                listen 127.0.0.1:\(self.tlsPort) ssl http2;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                location / {
                  add_header X-Seen-Authorization $http_authorization always;
                  add_header X-Seen-Protocol $server_protocol always;
                  return 200 "tls ok\\n";
                }
              }
              server {
                listen 127.0.0.1:\(self.mutualTLSPort) ssl;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                ssl_client_certificate \(directory)/ca.pem;
                ssl_verify_client on;
                location / { return 200 "mtls ok $ssl_client_s_dn\\n"; }
              }
              server {
                listen 127.0.0.1:\(self.wrongNamePort) ssl;
                ssl_certificate \(directory)/wrong.pem;
                ssl_certificate_key \(directory)/wrong.key;
                location / { return 200 "wrong name\\n"; }
              }
              server {
                listen 127.0.0.1:\(self.http1Port) ssl;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                large_client_header_buffers 8 16k;
                location / {
                  add_header X-Seen-Protocol $server_protocol always;
                  return 200 "$http_x_pad_1$http_x_pad_2$http_x_pad_3";
                }
              }
              \(extraServers(directory))
            """
        self.process = try Self.start(nginx, in: directory, workerConnections: 256, accessLog: "off", http: http)
        let ports = [self.tlsPort, self.mutualTLSPort, self.wrongNamePort]
        guard eventually({ ports.allSatisfy(Self.accepts) }) else {
            let log = (try? String(contentsOfFile: self.file("error.log"), encoding: .utf8)) ?? ""
            self.process.terminate()
            throw Failure(description: "nginx did not start: \(log)")
        }
    }

    deinit {
        self.process.terminate()
        self.process.waitUntilExit()
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// The nginx binary Debian installs, if any.
    static var executable: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile)
    }

    /// Starts `nginx` in the foreground, all its files in `directory` (which holds a `tmp`
    /// folder), one worker, with `http` as the body of its `http` block. nginx refuses to run
    /// its worker as `nobody` when started by root without a `user` line, so root runs it as
    /// root.
    static func start(
        _ nginx: String,
        in directory: String,
        workerConnections: Int,
        accessLog: String,
        http: String
    ) throws -> Process {
        let config = """
            \(getuid() == 0 ? "user root;" : "")
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections \(workerConnections); }
            http {
              access_log \(accessLog);
              client_body_temp_path \(directory)/tmp/body;
              proxy_temp_path \(directory)/tmp/proxy;
              fastcgi_temp_path \(directory)/tmp/fastcgi;
              uwsgi_temp_path \(directory)/tmp/uwsgi;
              scgi_temp_path \(directory)/tmp/scgi;
            \(http)
            }
            """
        let configPath = "\(directory)/nginx.conf"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", directory, "-c", configPath, "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func makeCertificates(in directory: URL) throws {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        func openssl(_ arguments: [String]) throws {
            let output = try CommandRunner.run(["openssl"] + arguments, timeout: 60)
            guard output.status == 0 else {
                throw Failure(description: "openssl \(arguments.first ?? ""): \(output.stderr)")
            }
        }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        for ca in ["ca", "other-ca"] {
            try openssl(
                ["req", "-x509"] + ec + [
                    "-keyout", path("\(ca).key"), "-out", path("\(ca).pem"), "-days", "2", "-subj",
                    "/CN=tokenproxy \(ca)",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ]
            )
        }
        let leaves = [
            ("server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
            ("wrong", "/CN=wrong.example", "subjectAltName=DNS:wrong.example\nextendedKeyUsage=serverAuth"),
            ("client", "/CN=tokenproxy-client", "extendedKeyUsage=clientAuth"),
        ]
        for (name, subject, extensions) in leaves {
            try extensions.write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
            try openssl(["req"] + ec + ["-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", subject])
            try openssl([
                "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("\(name).pem"), "-days", "2", "-extfile", path("\(name).ext"),
            ])
        }
        chmod(path("client.key"), 0o600)
    }

    private static func accepts(_ port: UInt16) -> Bool {
        (try? TestClient(port: port)) != nil
    }
}
