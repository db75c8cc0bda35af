import Foundation

/// A strict reader of the Prometheus text exposition format 0.0.4: every line is a `# HELP`,
/// a `# TYPE` or a sample `name{label="value",...} value`; names, label names and escapes are
/// checked, each sample belongs to a family typed before it, no series appears twice, and a
/// histogram's buckets are cumulative with the `+Inf` bucket equal to `_count`.
struct PrometheusExposition {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Sample: Hashable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    private(set) var types: [String: String] = [:]
    private(set) var help: [String: String] = [:]
    private(set) var samples: [Sample] = []

    /// The value of the series `name` with exactly `labels`, if present.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        self.samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Every sample of `name`.
    func series(_ name: String) -> [Sample] {
        self.samples.filter { $0.name == name }
    }

    init(_ text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else { throw Failure(description: "no final newline") }
        var seen: Set<String> = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let fail = { (why: String) in Failure(description: "line \(number + 1): \(why): \(line)") }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
                guard parts.count >= 3, parts[0] == "#", Self.isMetricName(parts[2]) else { throw fail("bad comment") }
                let name = String(parts[2])
                switch parts[1] {
                case "HELP":
                    guard self.help[name] == nil, self.types[name] == nil else {
                        throw fail("HELP after TYPE or twice")
                    }
                    self.help[name] = parts.count == 4 ? String(parts[3]) : ""
                case "TYPE":
                    let kinds = ["counter", "gauge", "histogram", "summary", "untyped"]
                    guard parts.count == 4, kinds.contains(String(parts[3])), self.types[name] == nil else {
                        throw fail("bad TYPE")
                    }
                    self.types[name] = String(parts[3])
                default:
                    throw fail("a comment that is neither HELP nor TYPE")
                }
                continue
            }
            let sample = try Self.sample(line, fail)
            guard let family = self.family(of: sample.name) else { throw fail("sample before its TYPE") }
            if self.types[family] == "counter" {
                guard sample.name.hasSuffix("_total") || sample.name == family else { throw fail("counter name") }
            }
            let key =
                sample.name + "|"
                + sample.labels.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: ",")
            guard seen.insert(key).inserted else { throw fail("duplicate series") }
            self.samples.append(sample)
        }
        try self.checkHistograms()
    }

    private func family(of name: String) -> String? {
        if self.types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if self.types[base] == "histogram" { return base }
        }
        return nil
    }

    private func checkHistograms() throws {
        for (family, type) in self.types where type == "histogram" {
            var groups: [[String: String]: [(Double, Double)]] = [:]
            for sample in self.series(family + "_bucket") {
                var labels = sample.labels
                guard let le = labels.removeValue(forKey: "le"), let bound = Self.number(Substring(le)) else {
                    throw Failure(description: "\(family): a bucket without a valid le")
                }
                groups[labels, default: []].append((bound, sample.value))
            }
            for (labels, buckets) in groups {
                let sorted = buckets.sorted { $0.0 < $1.0 }
                for (lower, upper) in zip(sorted, sorted.dropFirst()) where upper.1 < lower.1 {
                    throw Failure(description: "\(family)\(labels): buckets not cumulative")
                }
                guard let last = sorted.last, last.0 == .infinity else {
                    throw Failure(description: "\(family)\(labels): no +Inf bucket")
                }
                guard self.value(family + "_count", labels) == last.1, self.value(family + "_sum", labels) != nil else {
                    throw Failure(description: "\(family)\(labels): +Inf bucket differs from _count or no _sum")
                }
            }
        }
    }

    private static func sample(_ line: Substring, _ fail: (String) -> Failure) throws -> Sample {
        var rest = line[...]
        let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }
        guard Self.isMetricName(name) else { throw fail("bad metric name") }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let labelName = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                guard let first = labelName.first, first.isLetter || first == "_", first.isASCII,
                    labelName.allSatisfy(\.isASCII)
                else { throw fail("bad label name") }
                rest = rest.dropFirst(labelName.count)
                guard rest.hasPrefix("=\"") else { throw fail("label without =\"") }
                rest = rest.dropFirst(2)
                var value = ""
                while true {
                    guard let character = rest.popFirst() else { throw fail("unterminated label value") }
                    if character == "\"" { break }
                    if character == "\n" { throw fail("raw newline in a label value") }
                    if character == "\\" {
                        switch rest.popFirst() {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw fail("bad escape in a label value")
                        }
                    } else {
                        value.append(character)
                    }
                }
                guard labels.updateValue(value, forKey: String(labelName)) == nil else { throw fail("label twice") }
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw fail("labels not separated by a comma")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw fail("no space before the value") }
        rest = rest.dropFirst()
        guard let value = Self.number(rest) else { throw fail("bad value") }
        return Sample(name: String(name), labels: labels, value: value)
    }

    private static func number(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard !text.isEmpty, text.allSatisfy({ $0.isNumber || "+-.eE".contains($0) }) else { return nil }
            return Double(text)
        }
    }

    private static func isMetricName(_ name: Substring) -> Bool {
        guard let first = name.first, first.isLetter || first == "_" || first == ":" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") }
    }
}
