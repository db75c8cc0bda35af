import CSystemShims
import Foundation
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Runs a program with arguments (no shell) and collects its output, killing it after a timeout.
///
/// The program is started with `posix_spawn` and reaped with `waitpid`, and every descriptor
/// is made with a checked system call: when descriptors run out (EMFILE, ENFILE) the run
/// fails with an error instead of stopping the process, which Foundation's `Pipe` and
/// `Process` do.
enum CommandRunner {
    /// What the program produced.
    struct Output {
        /// The exit status, or 128 + the signal that ended it.
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

    /// Runs `argv` (the first element found on PATH unless it contains a slash), with
    /// standard input from `/dev/null`, for at most `timeout` seconds.
    static func run(_ argv: [String], timeout: Double) throws(Failure) -> Output {
        guard let program = argv.first, let executable = self.locate(program) else {
            throw Failure(description: "\(argv.first ?? "(empty)") not found")
        }
        let stdout = try Self.pipe()
        defer { stdout.closeAll() }
        let stderr = try Self.pipe()
        defer { stderr.closeAll() }
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Self.failure("cannot open /dev/null", errno) }
        defer { close(input) }

        let group = try Self.spawn(executable, argv, input: input, output: stdout.writing, errors: stderr.writing)
        // The child has its copies; the parent's write ends close so the reads see EOF.
        close(stdout.writing)
        close(stderr.writing)
        stdout.writing = -1
        stderr.writing = -1

        // The child leads a process group of its own. At the timeout the whole group gets
        // SIGTERM, a second later SIGKILL: a script's own children (a `sleep`, a hung `curl`)
        // hold the output pipes too. Two seconds after the timeout reading stops whatever
        // still holds the pipes (a process that left the group), so a fetch never waits
        // longer than that.
        let started = ContinuousClock.now
        let soft = started + BoundedSeconds.duration(timeout)
        let hard = soft + .seconds(1)
        let giveUp = soft + .seconds(2)
        var streams = [
            OutputStream(descriptor: stdout.reading, limit: self.maximumOutput + 1),
            OutputStream(descriptor: stderr.reading, limit: 64 * 1024),
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
        // Whatever still runs of the program is ended; the wait for its exit is bounded like
        // the reads, and a program not seen to exit by then counts as timed out (it is
        // reaped in the background once it goes).
        var status = Self.reap(group)
        if status == nil, ContinuousClock.now >= soft {
            kill(-group, SIGKILL)
        }
        while status == nil, ContinuousClock.now < giveUp {
            Thread.sleep(forTimeInterval: 0.01)
            status = Self.reap(group)
        }
        guard let status else {
            kill(-group, SIGKILL)
            DispatchQueue.global().async {
                var ignored: Int32 = 0
                _ = waitpid(group, &ignored, 0)
            }
            return Output(status: -1, stdout: Data(), stderr: "", timedOut: true)
        }
        let output = streams[0].data
        let errorText = String(decoding: streams[1].data.suffix(1024), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Output(
            status: status,
            stdout: output.count > self.maximumOutput ? Data() : output,
            stderr: errorText,
            timedOut: timedOut
        )
    }

    /// A pipe's two descriptors, close-on-exec; -1 once closed.
    final class PipeEnds {
        let reading: Int32
        var writing: Int32

        init(reading: Int32, writing: Int32) {
            self.reading = reading
            self.writing = writing
        }

        /// Closes what is still open.
        func closeAll() {
            close(self.reading)
            if self.writing >= 0 { close(self.writing) }
            self.writing = -1
        }
    }

    /// A new close-on-exec pipe, or a failure naming the error (EMFILE, ENFILE).
    static func pipe() throws(Failure) -> PipeEnds {
        var descriptors: [Int32] = [-1, -1]
        guard Glibc.pipe(&descriptors) == 0 else { throw self.failure("cannot make a pipe", errno) }
        // Close-on-exec, so programs started by other threads do not inherit them (the child
        // gets its own copies through the spawn's dup2).
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        return PipeEnds(reading: descriptors[0], writing: descriptors[1])
    }

    /// Starts `executable` with `argv` as the leader of a new process group, standard
    /// streams on the given descriptors and no other descriptor, every signal at its default disposition and none
    /// blocked (the proxy's own handling is not inherited). Returns its pid.
    private static func spawn(
        _ executable: String,
        _ argv: [String],
        input: Int32,
        output: Int32,
        errors: Int32
    ) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, errors, 2)
        // Nothing else of the proxy's reaches the program: not a client socket, not the
        // token store's lock (a lock descriptor held by the program would keep the lock).
        tp_spawn_file_actions_addclosefrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        )

        var arguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        arguments.append(nil)
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, executable, &actions, &attributes, arguments, environ)
        // ETXTBSY: a program another thread just wrote is still open for writing in a child
        // being started elsewhere until that child's exec; a few short retries outlast it.
        for _ in 0..<20 where result == ETXTBSY {
            Thread.sleep(forTimeInterval: 0.01)
            result = posix_spawn(&pid, executable, &actions, &attributes, arguments, environ)
        }
        guard result == 0 else { throw self.failure("cannot start \(argv.first ?? executable)", result) }
        return pid
    }

    /// The exit status of `pid` once it has ended (128 + the signal when one ended it), nil
    /// while it runs.
    private static func reap(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == 0 || (result == -1 && errno == EINTR) { return nil }
        guard result == pid else { return -1 }  // ECHILD: reaped elsewhere; nothing to report.
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    private static func failure(_ what: String, _ code: Int32) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(code)))")
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
