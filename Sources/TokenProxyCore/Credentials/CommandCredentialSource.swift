import Foundation

/// The `command` grant: runs an argv (never a shell), takes a token from its stdout (the
/// bare token, or JSON with `access_token` and optional `expires_in`), and caches it for
/// `cache_seconds` or until `expires_in`, whichever ends first; with neither, until a 401.
/// One run at a time: requests arriving meanwhile share its result.
public final class CommandCredentialSource: CredentialSource {
    private let name: String
    private let argv: [String]
    private let cacheSeconds: Double?
    private let timeout: Double
    private let cache: SharedTokenCache

    /// Creates the source for provider `name`; a run taking longer than `timeout` is killed.
    public init(name: String, argv: [String], cacheSeconds: Double?, refreshSkewSeconds: Double, timeout: Double) {
        self.name = name
        self.argv = argv
        self.cacheSeconds = cacheSeconds
        self.timeout = timeout
        self.cache = SharedTokenCache(refreshSkewSeconds: refreshSkewSeconds)
    }

    /// A cached token, or the result of the one run in flight.
    public func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        self.cache.token(completion: completion) {
            // A thread of its own: the run blocks until the command exits, and a blocked
            // Dispatch worker would be one fewer for client connections.
            Thread.detachNewThread { [self] in
                self.cache.complete(self.run(started: .now))
            }
        }
    }

    /// Forgets `token` if it is still the cached one.
    public func invalidate(_ token: AccessToken) {
        self.cache.invalidate(token)
    }

    private func run(started: ContinuousClock.Instant) -> Result<AccessToken, ProxyError> {
        let output: CommandRunner.Output
        do {
            output = try CommandRunner.run(self.argv, timeout: self.timeout)
        } catch {
            return .failure(ProxyError(.tokenUnavailable, "command failed: \(error)", provider: self.name))
        }
        guard output.status == 0 else {
            let reason =
                output.timedOut ? "timed out after \(Int(self.timeout)) s" : "exited with status \(output.status)"
            let stderr = output.stderr.isEmpty ? "" : ": \(output.stderr)"
            return .failure(ProxyError(.tokenUnavailable, "command \(reason)\(stderr)", provider: self.name))
        }
        switch CommandOutputParser.parse(output.stdout) {
        case .failure(let message):
            return .failure(ProxyError(.tokenUnavailable, "command output: \(message)", provider: self.name))
        case .success(let (value, expiresIn)):
            // Expiry counts from when the command started, on the monotonic clock.
            var lifetimes: [Double] = []
            if let expiresIn { lifetimes.append(expiresIn) }
            if let cacheSeconds = self.cacheSeconds { lifetimes.append(cacheSeconds) }
            let expiresAt = lifetimes.min().map { started + BoundedSeconds.duration($0) }
            return .success(AccessToken(value: value, expiresAt: expiresAt, obtainedAt: .now))
        }
    }
}

/// Reads a credential command's stdout: a bare token, or a JSON object with
/// `access_token` and optional `expires_in`.
enum CommandOutputParser {
    /// Why output was refused; never contains the output itself.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    static func parse(_ stdout: Data) -> Result<(String, Double?), Refusal> {
        guard let text = String(data: stdout, encoding: .utf8) else {
            return .failure(Refusal(description: "not UTF-8"))
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .failure(Refusal(description: "empty")) }
        if trimmed.hasPrefix("{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
                return .failure(Refusal(description: "invalid JSON"))
            }
            guard let token = object["access_token"] as? String, !token.isEmpty else {
                return .failure(Refusal(description: "JSON without a string access_token"))
            }
            if let problem = TokenSyntax.problem(token) {
                return .failure(Refusal(description: problem))
            }
            var expiresIn: Double?
            if let value = object["expires_in"], !(value is NSNull) {
                guard let number = BoundedSeconds.number(value), number > 0, number <= BoundedSeconds.maximumLifetime
                else {
                    return .failure(Refusal(description: "expires_in is not a sensible number of seconds"))
                }
                expiresIn = number
            }
            return .success((token, expiresIn))
        }
        guard !trimmed.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
        else {
            return .failure(Refusal(description: "more than one word; print only the token, or JSON"))
        }
        if let problem = TokenSyntax.problem(trimmed) {
            return .failure(Refusal(description: problem))
        }
        return .success((trimmed, nil))
    }
}

/// Runs a program with arguments (no shell) and collects its output, killing it after a timeout.
enum CommandRunner {
    /// What the program produced.
    struct Output {
        var status: Int32
        var stdout: Data
        /// At most the last 1 KiB of stderr, trimmed, for error messages.
        var stderr: String
        var timedOut: Bool
    }

    /// Why the program could not be run.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private static let maximumOutput = 1 << 20

    static func run(_ argv: [String], timeout: Double) throws(Failure) -> Output {
        guard let program = argv.first, let executable = self.locate(program) else {
            throw Failure(description: "\(argv.first ?? "(empty)") not found")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(argv.dropFirst())
        // Pipes made here rather than with Foundation's `Pipe`, which stops the process when
        // no descriptor is left (EMFILE): running out fails this run only.
        let stdout = try Self.pipe()
        let stderr = try Self.pipe()
        process.standardOutput = stdout.writing
        process.standardError = stderr.writing
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot start \(program): \(error.localizedDescription)")
        }
        // The child has its copies; the parent's write ends close so the reads see EOF.
        try? stdout.writing.close()
        try? stderr.writing.close()
        // The child leads a process group of its own (Foundation's Process starts it so). At
        // the timeout the whole group gets SIGTERM, a second later SIGKILL: a script's own
        // children (a `sleep`, a hung `curl`) hold the output pipes too. Two seconds after the
        // timeout reading stops whatever still holds the pipes (a process that left the
        // group), so a fetch never waits longer than that.
        let group = process.processIdentifier
        let started = ContinuousClock.now
        let soft = started + BoundedSeconds.duration(timeout)
        let hard = soft + .seconds(1)
        let giveUp = soft + .seconds(2)
        var streams = [
            OutputStream(descriptor: stdout.reading.fileDescriptor, limit: self.maximumOutput + 1),
            OutputStream(descriptor: stderr.reading.fileDescriptor, limit: 64 * 1024),
        ]
        var timedOut = false
        var killed = false
        while streams.contains(where: { !$0.ended }), ContinuousClock.now < giveUp {
            let now = ContinuousClock.now
            if !timedOut, now >= soft {
                timedOut = true
                kill(-group, SIGTERM)
            }
            if !killed, now >= hard {
                killed = true
                kill(-group, SIGKILL)
            }
            let next = !timedOut ? soft : (!killed ? hard : giveUp)
            let wait = max(1, Int32(min(Double((next - now).milliseconds), 1000)))
            Self.readAvailable(&streams, waitingAtMost: wait)
        }
        // Whatever still runs of the program is ended. Foundation learns of the exit through
        // a descriptor the program's children inherit too, so a detached child can keep it
        // reporting "running": the wait is bounded like the reads, and a program not seen to
        // exit by then counts as timed out.
        if process.isRunning, ContinuousClock.now >= soft {
            kill(-group, SIGKILL)
        }
        while process.isRunning, ContinuousClock.now < giveUp {
            Thread.sleep(forTimeInterval: 0.01)
        }
        guard !process.isRunning else {
            return Output(status: -1, stdout: Data(), stderr: "", timedOut: true)
        }
        let output = streams[0].data
        let errors = streams[1].data
        let errorText = String(decoding: errors.suffix(1024), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Output(
            status: process.terminationStatus,
            stdout: output.count > self.maximumOutput ? Data() : output,
            stderr: errorText,
            timedOut: timedOut
        )
    }

    /// A pipe's two ends, each closed when its handle goes away.
    struct PipeEnds {
        var reading: FileHandle
        var writing: FileHandle
    }

    /// A new close-on-exec pipe, or a failure naming the error (EMFILE, ENFILE).
    static func pipe() throws(Failure) -> PipeEnds {
        var descriptors: [Int32] = [-1, -1]
        guard Glibc.pipe(&descriptors) == 0 else {
            throw Failure(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec, so programs started at the same time by other threads do not inherit
        // them (the child gets its own copies through the spawn's dup2).
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        return PipeEnds(
            reading: FileHandle(fileDescriptor: descriptors[0], closeOnDealloc: true),
            writing: FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
        )
    }

    /// One output pipe of the program being read.
    private struct OutputStream {
        let descriptor: Int32
        let limit: Int
        var data = Data()
        var ended = false
    }

    /// Waits up to `milliseconds` for output, then reads what is there; a stream ends at EOF
    /// or an error. Past its limit, bytes are read and dropped so the program never blocks.
    private static func readAvailable(_ streams: inout [OutputStream], waitingAtMost milliseconds: Int32) {
        var polled = streams.filter { !$0.ended }.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        guard poll(&polled, nfds_t(polled.count), milliseconds) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 16384)
        for entry in polled where entry.revents != 0 {
            guard let index = streams.firstIndex(where: { $0.descriptor == entry.fd }) else { continue }
            let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
            if count > 0 {
                if streams[index].data.count < streams[index].limit {
                    streams[index].data.append(contentsOf: buffer[0..<count])
                }
            } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                streams[index].ended = true
            }
        }
    }

    /// `program` itself when it contains a slash, else the first executable match on PATH.
    private static func locate(_ program: String) -> String? {
        if program.contains("/") {
            return FileManager.default.isExecutableFile(atPath: program) ? program : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }
}
