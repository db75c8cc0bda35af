import Foundation
import TokenProxySupport

/// Runs a program with arguments (no shell) and collects its output, killing it after a timeout.
///
/// The program is a ``ChildProcess`` (started with `posix_spawn`, reaped with `waitpid`), and
/// every descriptor is made with a checked system call: when descriptors run out (EMFILE,
/// ENFILE) the run fails with an error instead of stopping the process, which Foundation's
/// `Pipe` and `Process` do.
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
        let input: Int32
        do {
            input = try FileSystem.openNullDevice()
        } catch {
            throw Failure(description: "cannot open /dev/null: \(error.reason)")
        }
        defer { Descriptor.close(input) }

        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                executable,
                arguments: argv,
                standardInput: input,
                standardOutput: stdout.writing,
                standardError: stderr.writing
            )
        } catch {
            throw Failure(description: "cannot start \(program): \(error.reason)")
        }
        // The child has its copies; the parent's write ends close so the reads see EOF.
        stdout.closeWriting()
        stderr.closeWriting()

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
                child.terminateGroup()
            }
            if !killed, now >= hard {
                killed = true
                child.killGroup()
            }
            let next = !timedOut ? soft : (!killed ? hard : giveUp)
            let wait = max(1, Int32(min(Double((next - now).milliseconds), 1000)))
            Self.readAvailable(&streams, waitingAtMost: wait)
        }
        // Whatever still runs of the program is ended; the wait for its exit is bounded like
        // the reads, and a program not seen to exit by then counts as timed out (it is
        // reaped in the background once it goes).
        var status = child.exitStatus()
        if status == nil, ContinuousClock.now >= soft {
            child.killGroup()
        }
        while status == nil, ContinuousClock.now < giveUp {
            Thread.sleep(forTimeInterval: 0.01)
            status = child.exitStatus()
        }
        guard let status else {
            child.killGroup()
            child.reapWhenEnded()
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

    /// A pipe's two descriptors, close-on-exec; the writing end is -1 once closed.
    final class PipeEnds {
        let reading: Int32
        private(set) var writing: Int32

        init(_ pipe: PipeDescriptors) {
            self.reading = pipe.reading
            self.writing = pipe.writing
        }

        /// Closes the writing end, once the child has its copy.
        func closeWriting() {
            if self.writing >= 0 { Descriptor.close(self.writing) }
            self.writing = -1
        }

        /// Closes what is still open.
        func closeAll() {
            Descriptor.close(self.reading)
            self.closeWriting()
        }
    }

    /// A new close-on-exec pipe, or a failure naming the error (EMFILE, ENFILE).
    static func pipe() throws(Failure) -> PipeEnds {
        do {
            return PipeEnds(try PipeDescriptors.make())
        } catch {
            throw Failure(description: "cannot make a pipe: \(error.reason)")
        }
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
        let ready = Descriptor.waitReadable(streams.filter { !$0.ended }.map(\.descriptor), milliseconds: milliseconds)
        guard !ready.isEmpty else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 1)
        defer { buffer.deallocate() }
        for descriptor in ready {
            guard let index = streams.firstIndex(where: { $0.descriptor == descriptor }) else { continue }
            switch try? Descriptor.read(descriptor, into: buffer) {
            case .processed(let count) where count > 0:
                if streams[index].data.count < streams[index].limit {
                    streams[index].data.append(contentsOf: buffer[0..<count])
                }
            case .wouldBlock:
                continue
            case .processed, nil:
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
