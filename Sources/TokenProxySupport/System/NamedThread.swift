import CSystemShims
import Foundation

/// Threads of the proxy's own (the upstream engines' event threads, the log writer, the deadline
/// thread, the credential threads): every one is started here, under a name.
package enum NamedThread {
    /// Starts a thread running `run`, named `name` for the OS too (`top -H`,
    /// `/proc/PID/task/TID/comm`, which keep at most 15 bytes of it): Foundation's
    /// `Thread.name` does not reach the OS on Linux.
    @discardableResult
    package static func start(named name: String, _ run: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            tp_name_current_thread(name)
            run()
        }
        thread.name = name
        thread.start()
        return thread
    }
}
