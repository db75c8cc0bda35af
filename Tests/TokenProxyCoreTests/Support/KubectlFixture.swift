import Foundation

/// A real `kubectl` (a client-go program) using `tokenproxy credential kubectl` as its exec
/// credential plugin against a fake Kubernetes API server: nginx over TLS with a test CA,
/// answering `/api` only for one bearer token, with a token store and a provider that gets
/// its tokens (`issued-N`) from a ``FakeAuthorizationServer``.
final class KubectlFixture {
    /// Where kubectl is expected (Debian's package, or an upstream release).
    static let kubectl = ["/usr/bin/kubectl", "/usr/local/bin/kubectl"].first(
        where: FileManager.default.isExecutableFile
    )

    /// The token endpoint the provider uses.
    let auth: FakeAuthorizationServer
    /// The configuration file `credential kubectl` is given.
    let config: String
    private let store: TokenStoreFixture
    private let nginx: NginxFixture
    private let port: UInt16

    /// Starts the fake API server, accepting only `Bearer \(acceptedToken)`, and writes a
    /// configuration with a `client_credentials` provider named `cluster`.
    init(acceptedToken: String) throws {
        self.auth = try FakeAuthorizationServer()
        self.store = try TokenStoreFixture()
        let port = try LoopbackSocket.freePort()
        self.port = port
        self.nginx = try NginxFixture { directory in
            """
            server {
              listen 127.0.0.1:\(port) ssl;
              ssl_certificate \(directory)/server.pem;
              ssl_certificate_key \(directory)/server.key;
              default_type application/json;
              location / {
                if ($http_authorization != "Bearer \(acceptedToken)") {
                  return 401 '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}';
                }
                return 200 '{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}';
              }
            }
            """
        }
        guard eventually({ (try? TestClient(port: port)) != nil }) else {
            throw TestFailure(message: "the fake API server did not listen on \(port)")
        }
        self.config = self.store.root + "/proxy.json"
        let json = """
            {"token_store": {"path": "\(self.store.storePath)"},
             "providers": {"cluster": {"grant": "client_credentials", "token_url": "\(self.auth.tokenURL)",
               "client_id": "c", "client_secret": "s", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        try json.write(toFile: self.config, atomically: true, encoding: .utf8)
    }

    /// Writes a kubeconfig whose user runs the built binary as its exec plugin, declared with
    /// `execAPIVersion`, and whose cluster is the fake API server trusted through the test CA.
    func kubeconfig(execAPIVersion: String) throws -> String {
        let path = self.store.root + "/kubeconfig-\(UUID().uuidString)"
        let interactive = execAPIVersion.hasSuffix("/v1") ? "      interactiveMode: Never\n" : ""
        let text = """
            apiVersion: v1
            kind: Config
            clusters:
            - name: fake
              cluster:
                server: https://127.0.0.1:\(self.port)
                certificate-authority: \(self.nginx.caFile)
            users:
            - name: tokenproxy
              user:
                exec:
                  apiVersion: \(execAPIVersion)
                  command: \(TokenProxyBinary.path)
                  args: [credential, kubectl, --provider, cluster, --config, \(self.config)]
            \(interactive)contexts:
            - name: fake
              context: {cluster: fake, user: tokenproxy}
            current-context: fake

            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs `kubectl --kubeconfig kubeconfig get --raw /api` with its home (and so its
    /// caches) in the test's directory.
    func getRawAPI(kubeconfig: String) throws -> TokenProxyBinary.Result {
        guard let kubectl = Self.kubectl else { throw TestFailure(message: "kubectl is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: kubectl)
        process.arguments = ["--kubeconfig", kubeconfig, "--request-timeout", "30s", "get", "--raw", "/api"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = self.store.root
        environment["KUBERNETES_EXEC_INFO"] = nil
        environment["KUBECONFIG"] = nil
        process.environment = environment
        // Files rather than pipes: nothing has to drain them while kubectl runs.
        let outPath = self.store.root + "/kubectl.out"
        let errPath = self.store.root + "/kubectl.err"
        for path in [outPath, errPath] {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw TestFailure(message: "cannot create \(path)")
            }
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer {
            try? out.close()
            try? err.close()
        }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return TokenProxyBinary.Result(
            status: process.terminationStatus,
            signal: nil,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        )
    }
}
