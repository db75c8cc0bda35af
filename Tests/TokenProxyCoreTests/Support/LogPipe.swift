import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A pipe whose read end the test drains when it chooses.
final class LogPipe: @unchecked Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init(nonBlockingWrites: Bool = false) throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestFailure(message: "pipe: \(errno)") }
        self.readEnd = ends[0]
        self.writeEnd = ends[1]
        if nonBlockingWrites {
            _ = fcntl(self.writeEnd, F_SETFL, fcntl(self.writeEnd, F_GETFL) | O_NONBLOCK)
        }
    }

    deinit {
        close(self.readEnd)
        close(self.writeEnd)
    }

    /// Reads until `complete` holds for what arrived so far, the pipe ends, or nothing more
    /// arrives for 10 seconds.
    func read(until complete: (String) -> Bool) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !complete(String(decoding: data, as: UTF8.self)) {
            var entry = pollfd(fd: self.readEnd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 10_000) == 1 else { break }
            let count = Glibc.read(self.readEnd, &buffer, buffer.count)
            guard count > 0 else { break }
            data += buffer[0..<count]
        }
        return String(decoding: data, as: UTF8.self)
    }
}
