import Foundation
import Logging

/// A swift-log handler writing one JSON object per line, through a ``LogWriter`` (standard
/// error by default): `ts`, `level`, `msg`, the label as `logger`, and every metadata key at
/// the top level.
public struct JSONLogHandler: LogHandler {
    private let label: String
    private let writer: LogWriter
    /// Metadata added to every message from this handler.
    public var metadata: Logger.Metadata = [:]
    /// The minimum level written.
    public var logLevel: Logger.Level = .info

    /// Creates a handler for `label` writing to `writer`.
    public init(label: String, writer: LogWriter = .standardError) {
        self.label = label
        self.writer = writer
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
        self.writer.append(JSONOutput.encode(object))
    }
}
