import CSystemShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A program the proxy started (a `command` credential), as the leader of a process group of
/// its own so that the program and whatever it started can be ended together.
///
/// It is started with `posix_spawn` and reaped with `waitpid`: no fork of the proxy's
/// threads, and every failure (EMFILE, EAGAIN) an error instead of a stop of the process.
package struct ChildProcess: Sendable {
    /// The process id, which is also its process group's.
    package let id: Int32

    /// Starts `executable` with `arguments` (the first being the program's name) and the
    /// given descriptors as its standard input, output and error; it gets no other descriptor
    /// and every signal at its default disposition, none blocked (the proxy's own handling
    /// is not inherited).
    package static func spawn(
        _ executable: String,
        arguments: [String],
        standardInput: Int32,
        standardOutput: Int32,
        standardError: Int32
    ) throws(SystemError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)
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

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        // ETXTBSY: a program another thread just wrote is still open for writing in a child
        // being started elsewhere until that child's exec; a few short retries outlast it.
        for _ in 0..<20 where result == ETXTBSY {
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            _ = nanosleep(&pause, nil)
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard result == 0 else { throw SystemError(call: "posix_spawn(\(executable))", errno: result) }
        return ChildProcess(id: pid)
    }

    /// Asks the whole process group to end (SIGTERM).
    package func terminateGroup() {
        _ = kill(-self.id, SIGTERM)
    }

    /// Ends the whole process group (SIGKILL).
    package func killGroup() {
        _ = kill(-self.id, SIGKILL)
    }

    /// The exit status once the program has ended (128 + the signal when one ended it), nil
    /// while it runs; -1 when it was reaped elsewhere (ECHILD), with nothing to report.
    package func exitStatus() -> Int32? {
        var status: Int32 = 0
        let result: Int32
        do {
            result = try syscallBlocking("waitpid", waitpid(self.id, &status, WNOHANG))
        } catch {
            return -1
        }
        guard result == self.id else { return nil }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Reaps the program once it ends, on a thread of its own, for a program the caller
    /// stopped waiting for: it is not left a zombie.
    package func reapWhenEnded() {
        let id = self.id
        NamedThread.start(named: "tp-reaper") {
            var ignored: Int32 = 0
            _ = try? syscallBlocking("waitpid", waitpid(id, &ignored, 0))
        }
    }
}

/// The two ends of a pipe, both close-on-exec (programs started by other threads do not
/// inherit them; a child gets its own copies through the spawn's dup2).
package struct PipeDescriptors: Sendable {
    /// The end to read from.
    package let reading: Int32
    /// The end to write to.
    package let writing: Int32

    /// A new pipe, or the error (EMFILE, ENFILE).
    package static func make() throws(SystemError) -> PipeDescriptors {
        var descriptors: [Int32] = [-1, -1]
        try syscallBlocking("pipe", pipe(&descriptors))
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        return PipeDescriptors(reading: descriptors[0], writing: descriptors[1])
    }
}
