import Foundation
import Testing

@testable import TokenProxySupport

/// The System helpers the token store and `command` credentials are made of, on real files
/// and real processes.
struct SystemCallsTests {
    private static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-sys-\(UUID().uuidString)-\(name)").path
    }

    @Test func anExclusiveFileLockKeepsOtherHoldersOutUntilItIsReleased() throws {
        let path = Self.temporaryPath("lock")
        defer { FileSystem.removeQuietly(path) }
        let first = try FileSystem.openLockFile(path)
        let second = try FileSystem.openLockFile(path)
        defer { Descriptor.close(second) }
        #expect(try FileLock.lock(first, .exclusive, name: "flock", deadline: .now))
        #expect(try !FileLock.lock(second, .shared, name: "flock", deadline: .now + .milliseconds(20)))
        Descriptor.close(first)
        #expect(try FileLock.lock(second, .shared, name: "flock", deadline: .now))
    }

    @Test func aFileWrittenWholeReadsBackWhole() throws {
        let path = Self.temporaryPath("data")
        defer { FileSystem.removeQuietly(path) }
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0) }
        let writing = try FileSystem.createExclusively(path, permissions: 0o600)
        let written = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in try Descriptor.writeAll(writing, buffer) }
        }
        try written.get()
        try Descriptor.sync(writing)
        try Descriptor.closeWritten(writing)
        #expect(throws: SystemError.self) { try FileSystem.createExclusively(path, permissions: 0o600) }
        #expect(try FileStatus.of(path: path).permissions == 0o600)

        let reading = try FileSystem.openForReading(path)
        defer { Descriptor.close(reading) }
        #expect(try Descriptor.readAll(reading, limit: bytes.count) == bytes)
        let again = try FileSystem.openForReading(path)
        defer { Descriptor.close(again) }
        #expect(try Descriptor.readAll(again, limit: bytes.count - 1) == nil)
    }

    @Test func aChildProcessEndedBySignalReportsIt() throws {
        let pipe = try PipeDescriptors.make()
        defer { Descriptor.close(pipe.reading) }
        let input = try FileSystem.openNullDevice()
        defer { Descriptor.close(input) }
        let child = try ChildProcess.spawn(
            "/bin/sh",
            arguments: ["sh", "-c", "echo started; exec sleep 60"],
            standardInput: input,
            standardOutput: pipe.writing,
            standardError: pipe.writing
        )
        Descriptor.close(pipe.writing)
        #expect(Descriptor.wait(for: pipe.reading, readable: true, milliseconds: 10_000))
        #expect(child.exitStatus() == nil)
        child.terminateGroup()
        let status: Int32? = eventually { child.exitStatus() }
        #expect(status == 128 + SIGTERM)
    }
}
