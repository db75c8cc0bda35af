import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A swift-log handler writing the text lines swift-log's `StreamLogHandler` writes
/// (`2026-11-23T14:18:02+0000 info tokenproxy: key=value ... [Module] message`), through a
/// ``LogWriter``.
///
/// It exists for the cost of the access log, one line per request: `StreamLogHandler` takes
/// the local time with `localtime`, which makes glibc look at `/etc/localtime` again (a
/// `stat`) for every line, and merges and sorts dictionaries even when there is nothing to
/// merge.
public struct TextLogHandler: LogHandler {
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
        var line = Self.timestamp()
        line += " "
        line += event.level.rawValue
        if !self.label.isEmpty {
            line += " "
            line += self.label
        }
        line += ":"
        let merged: Logger.Metadata
        if let explicit = event.metadata, !explicit.isEmpty {
            merged = self.metadata.isEmpty ? explicit : self.metadata.merging(explicit) { $1 }
        } else {
            merged = self.metadata
        }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " "
            line += key
            line += "="
            line += "\(value)"
        }
        line += " ["
        line += event.source
        line += "] "
        line += "\(event.message)"
        line += "\n"
        line.withUTF8 { self.writer.append($0) }
    }

    /// The local time to the second, with its UTC offset, as `StreamLogHandler` writes it.
    /// `localtime_r` does not re-read the time zone for every call as `localtime` does.
    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return "<unknown>" }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            guard let base = buffer.baseAddress else { return "<unknown>" }
            let count = strftime(base, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
            return String(decoding: UnsafeRawBufferPointer(start: base, count: count), as: UTF8.self)
        }
    }
}
