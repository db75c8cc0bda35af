import Foundation
import Logging
import Synchronization

/// A swift-log handler writing one JSON object per line to standard error: `ts`, `level`,
/// `msg`, the label as `logger`, and every metadata key at the top level.
public struct JSONLogHandler: LogHandler {
    private static let output = Mutex(())

    private let label: String
    /// Metadata added to every message from this handler.
    public var metadata: Logger.Metadata = [:]
    /// The minimum level written.
    public var logLevel: Logger.Level = .info

    /// Creates a handler for `label`.
    public init(label: String) {
        self.label = label
    }

    /// Metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// Writes one line.
    public func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in self.metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = "\(value)"
        }
        object["ts"] = Date().formatted(.iso8601.time(includingFractionalSeconds: true).year().month().day())
        object["level"] = event.level.rawValue
        object["msg"] = "\(event.message)"
        object["logger"] = self.label
        let line = JSONOutput.encode(object)
        Self.output.withLock { _ in
            line.withUnsafeBytes { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}
