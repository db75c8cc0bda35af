import Foundation
import Synchronization
import TokenProxySupport

/// Collects the problems found while a configuration is decoded, so that decoding goes on after
/// the first one and the user sees every problem at once.
///
/// One collector travels through `JSONDecoder.userInfo` (under ``userInfoKey``); every
/// hand-written `init(from:)` records into it instead of throwing, and uses a placeholder value.
final class ConfigurationProblemCollector: Sendable {
    private struct Found {
        var problems: [ConfigurationProblem] = []
        var brokenProviderNames: Set<String> = []
    }

    private let found = Mutex(Found())

    /// The environment used for defaults (`XDG_STATE_HOME`, `HOME`).
    let environment: [String: String]
    /// The directory relative paths are resolved against (the configuration file's), if any.
    let baseDirectory: String?

    /// The `userInfo` key under which decoders find the collector. Optional only because
    /// `CodingUserInfoKey.init(rawValue:)` is failable; it never fails for this key.
    static let userInfoKey: CodingUserInfoKey? = CodingUserInfoKey(rawValue: "tokenproxy.configuration.problems")

    /// Creates an empty collector.
    init(environment: [String: String], baseDirectory: String? = nil) {
        self.environment = environment
        self.baseDirectory = baseDirectory
    }

    /// Every problem recorded so far, in order.
    var all: [ConfigurationProblem] {
        self.found.withLockedValue { $0.problems }
    }

    /// The paths of every problem recorded so far.
    var paths: Set<String> {
        self.found.withLockedValue { Set($0.problems.map(\.path)) }
    }

    /// Providers whose `grant` was missing or invalid: they are left out of the result, and
    /// routes naming them are not reported a second time as naming an unknown provider.
    var brokenProviders: Set<String> {
        self.found.withLockedValue { $0.brokenProviderNames }
    }

    /// Records a problem at `path`.
    func add(_ path: String, _ message: String) {
        self.found.withLockedValue { $0.problems.append(ConfigurationProblem(path: path, message: message)) }
    }

    /// Records a problem at the value named by `codingPath`.
    func add(at codingPath: [any CodingKey], _ message: String) {
        self.add(ConfigurationPath.of(codingPath), message)
    }

    /// Records problems found elsewhere (their paths are already absolute).
    func add(contentsOf problems: [ConfigurationProblem]) {
        self.found.withLockedValue { $0.problems.append(contentsOf: problems) }
    }

    /// Marks a provider as unusable (see ``brokenProviders``).
    func markBroken(provider name: String) {
        self.found.withLockedValue { _ = $0.brokenProviderNames.insert(name) }
    }

    /// Records a decoding failure of the value at `codingPath` in words a user understands.
    ///
    /// Only the JSON kinds are named ("expected a string, found a number"): the debug
    /// descriptions of the underlying errors are never used, as some of them quote the value.
    func record(_ error: any Error, at codingPath: [any CodingKey], expected: String, found: String?) {
        let depth = codingPath.count
        switch error {
        case is ConfigurationProblemReported:
            return
        case let error as ConfigurationError:
            self.add(contentsOf: error.problems)
        case DecodingError.typeMismatch(let type, let context) where context.codingPath.count > depth:
            self.add(at: context.codingPath, "expected \(ConfigurationTypeName.of(type))")
        case DecodingError.valueNotFound(let type, let context) where context.codingPath.count > depth:
            self.add(at: context.codingPath, "expected \(ConfigurationTypeName.of(type)), found null")
        case DecodingError.keyNotFound(let key, let context):
            self.add(at: context.codingPath + [key], "missing required key")
        default:
            let suffix = found.map { ", found \($0)" } ?? ""
            self.add(at: codingPath, "expected \(expected)\(suffix)")
        }
    }
}

/// Thrown by a decoder after it recorded its own problem, so that the caller skips the value
/// without recording it a second time.
struct ConfigurationProblemReported: Error {}

extension Decoder {
    /// The collector passed in `userInfo`, if any.
    var configurationCollector: ConfigurationProblemCollector? {
        guard let key = ConfigurationProblemCollector.userInfoKey else { return nil }
        return self.userInfo[key] as? ConfigurationProblemCollector
    }

    /// Runs `body` with the collector from `userInfo`. A value decoded on its own (by a plain
    /// `JSONDecoder`) gets a fresh collector instead, and its problems are thrown at the end
    /// as one ``ConfigurationError``.
    func withConfigurationProblems<T>(_ body: (ConfigurationProblemCollector) throws -> T) throws -> T {
        if let problems = self.configurationCollector {
            return try body(problems)
        }
        let problems = ConfigurationProblemCollector(environment: ProcessInfo.processInfo.environment)
        let value: T
        do {
            value = try body(problems)
        } catch let error as ConfigurationError {
            throw ConfigurationError(problems: problems.all + error.problems)
        } catch {
            problems.record(error, at: self.codingPath, expected: "a valid value", found: nil)
            throw ConfigurationError(problems: problems.all)
        }
        let all = problems.all
        guard all.isEmpty else { throw ConfigurationError(problems: all) }
        return value
    }

    /// Records `message` at this value's path and returns the error to throw.
    func configurationFailure(_ message: String, _ problems: ConfigurationProblemCollector) -> any Error {
        problems.add(at: self.codingPath, message)
        return ConfigurationProblemReported()
    }

    /// This value as a JSON object, or a recorded "expected an object" problem.
    func configurationObject<Key: CodingKey>(
        keyedBy type: Key.Type,
        _ problems: ConfigurationProblemCollector
    ) throws -> KeyedDecodingContainer<Key> {
        do {
            return try self.container(keyedBy: type)
        } catch {
            let found = ConfigurationJSONKind.probe(self).map { ", found \($0)" } ?? ""
            throw self.configurationFailure("expected an object\(found)", problems)
        }
    }

    /// The keys present in this object. Keys not in `known` are recorded as unknown, with a
    /// suggestion when one of `known` is close ("did you mean 'upstream'?").
    func configurationKeys(known: [String], _ problems: ConfigurationProblemCollector) -> Set<String> {
        guard let container = try? self.container(keyedBy: ConfigurationCodingKey.self) else { return [] }
        var present: Set<String> = []
        for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
            present.insert(key.stringValue)
            if !known.contains(key.stringValue) {
                problems.add(
                    at: self.codingPath + [key],
                    ConfigurationKeySuggestion.unknownKeyMessage(key.stringValue, known: known)
                )
            }
        }
        return present
    }
}
