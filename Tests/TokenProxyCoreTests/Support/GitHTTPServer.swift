import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real git smart-HTTP server on loopback: nginx with TLS (certificates from
/// ``NginxFixture/makeCertificates(in:)``) in front of `git http-backend` run by `fcgiwrap`.
/// nginx answers 401 unless the request carries `Authorization: Basic` with `user:token`
/// for the ``acceptedToken`` (or `Bearer` with it), and serves one bare repository, `repo.git`.
final class GitHTTPServer {
    let directory: URL
    let port: UInt16
    private let nginx: Process
    private let fcgiwrap: Process

    var caFile: String { self.file("ca.pem") }
    var url: String { "https://127.0.0.1:\(self.port)/repo.git" }

    func file(_ name: String) -> String {
        self.directory.appendingPathComponent(name).path
    }

    init(acceptedToken: String, username: String = "x-access-token") throws {
        let nginxPath = NginxFixture.executable
        let fcgiwrapPath = "/usr/sbin/fcgiwrap"
        let backend = "/usr/lib/git-core/git-http-backend"
        guard let nginxPath, FileManager.default.isExecutableFile(atPath: fcgiwrapPath),
            FileManager.default.isExecutableFile(atPath: backend)
        else {
            throw TestFailure(message: "nginx, fcgiwrap or git http-backend is not installed")
        }
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-git-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: self.directory.appendingPathComponent("tmp"),
            withIntermediateDirectories: true
        )
        try NginxFixture.makeCertificates(in: self.directory)
        let directory = self.directory.path
        try Self.makeRepository(at: "\(directory)/repos/repo.git", work: "\(directory)/seed")

        let socket = "\(directory)/fcgiwrap.sock"
        self.fcgiwrap = Process()
        self.fcgiwrap.executableURL = URL(fileURLWithPath: fcgiwrapPath)
        self.fcgiwrap.arguments = ["-s", "unix:\(socket)"]
        self.fcgiwrap.standardOutput = FileHandle.nullDevice
        self.fcgiwrap.standardError = FileHandle.nullDevice
        try self.fcgiwrap.run()

        self.port = try LoopbackSocket.freePort()
        let basic = Data("\(username):\(acceptedToken)".utf8).base64EncodedString()
        let http = """
              map $http_authorization $tp_allowed {
                "Basic \(basic)" 1;
                "Bearer \(acceptedToken)" 1;
                default 0;
              }
              server {
                listen 127.0.0.1:\(self.port) ssl;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                client_max_body_size 0;
                location / {
                  if ($tp_allowed = 0) {
                    add_header WWW-Authenticate 'Basic realm="git"' always;
                    return 401;
                  }
                  fastcgi_pass unix:\(socket);
                  fastcgi_param SCRIPT_FILENAME \(backend);
                  fastcgi_param GIT_PROJECT_ROOT \(directory)/repos;
                  fastcgi_param GIT_HTTP_EXPORT_ALL "";
                  fastcgi_param REMOTE_USER git;
                  fastcgi_param PATH_INFO $uri;
                  fastcgi_param QUERY_STRING $query_string;
                  fastcgi_param REQUEST_METHOD $request_method;
                  fastcgi_param CONTENT_TYPE $content_type;
                  fastcgi_param CONTENT_LENGTH $content_length;
                }
              }
            """
        self.nginx = try NginxFixture.start(
            nginxPath,
            in: directory,
            workerConnections: 64,
            accessLog: "\(directory)/access.log",
            http: http
        )
        let port = self.port
        guard eventually({ FileManager.default.fileExists(atPath: socket) && (try? TestClient(port: port)) != nil })
        else {
            let log = (try? String(contentsOfFile: "\(directory)/error.log", encoding: .utf8)) ?? ""
            self.stop()
            throw TestFailure(message: "the git server did not start: \(log)")
        }
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }

    private func stop() {
        if self.nginx.isRunning {
            self.nginx.terminate()
            self.nginx.waitUntilExit()
        }
        // fcgiwrap does not stop on SIGTERM while it waits for a connection.
        if self.fcgiwrap.isRunning {
            kill(self.fcgiwrap.processIdentifier, SIGKILL)
            self.fcgiwrap.waitUntilExit()
        }
    }

    /// A bare repository holding one commit on `main`.
    private static func makeRepository(at bare: String, work: String) throws {
        let environment = GitRunner.environment(home: work)
        for arguments in [
            ["init", "-q", "--bare", "-b", "main", bare],
            ["init", "-q", "-b", "main", work],
        ] {
            try GitRunner.run(arguments, environment: environment).check()
        }
        try "hello\n".write(toFile: "\(work)/README", atomically: true, encoding: .utf8)
        for arguments in [["add", "README"], ["commit", "-q", "-m", "first"], ["push", "-q", bare, "main"]] {
            try GitRunner.run(["-C", work] + arguments, environment: environment).check()
        }
    }
}

/// Runs the real `git` with a given environment and no terminal.
enum GitRunner {
    struct Result {
        var status: Int32
        var stderr: String

        func check() throws {
            guard self.status == 0 else { throw TestFailure(message: "git failed: \(self.stderr)") }
        }
    }

    /// A clean environment: no system or user configuration besides `home`, no prompt.
    static func environment(home: String) -> [String: String] {
        [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": home,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
        ]
    }

    static func run(_ arguments: [String], environment: [String: String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = arguments
        process.environment = environment
        let stderr = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stderr: String(decoding: data, as: UTF8.self))
    }
}
