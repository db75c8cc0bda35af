import Foundation

extension KeyedDecodingContainer {
    /// The value at `key`, or `nil` when the key is absent or `null` (which means "use the
    /// default"). A value that cannot be decoded is recorded in `problems` and gives `nil`, so
    /// decoding goes on.
    func configValue<T: Decodable>(
        _ type: T.Type,
        forKey key: Key,
        _ problems: ConfigurationProblemCollector
    ) -> T? {
        do {
            return try self.decodeIfPresent(T.self, forKey: key)
        } catch {
            let kind = try? self.decodeIfPresent(ConfigurationJSONKind.self, forKey: key)
            problems.record(
                error,
                at: self.codingPath + [key],
                expected: ConfigurationTypeName.of(T.self),
                found: kind?.description
            )
            return nil
        }
    }

    /// The value at `key`, or `defaultValue` when absent, `null` or invalid (then recorded).
    func configValue<T: Decodable>(
        _ type: T.Type,
        forKey key: Key,
        default defaultValue: T,
        _ problems: ConfigurationProblemCollector
    ) -> T {
        self.configValue(type, forKey: key, problems) ?? defaultValue
    }

    /// A string naming one case of `E`; anything else is recorded with the list of choices
    /// (and the closest one, when a typo is likely).
    func configEnum<E: RawRepresentable & CaseIterable>(
        _ type: E.Type,
        forKey key: Key,
        _ problems: ConfigurationProblemCollector
    ) -> E? where E.RawValue == String {
        guard let raw = self.configValue(String.self, forKey: key, problems) else { return nil }
        if let value = E(rawValue: raw) { return value }
        problems.add(
            at: self.codingPath + [key],
            ConfigurationKeySuggestion.choiceMessage(raw, choices: E.allCases.map(\.rawValue))
        )
        return nil
    }

    /// A list whose elements are decoded one by one: a bad element is recorded at its own
    /// index (`scopes[1]`) and left out, and the others are still decoded.
    func configList<T: Decodable>(
        _ type: T.Type,
        forKey key: Key,
        _ problems: ConfigurationProblemCollector
    ) -> [T]? {
        let elements = self.configValue([ConfigurationElement<T>].self, forKey: key, problems)
        return elements.map { list in list.compactMap(\.value) }
    }

    /// An object used as a map from names to values (`add_headers`, `providers`), each value
    /// decoded on its own as in ``configList(_:forKey:_:)``.
    func configMap<T: Decodable>(
        _ type: T.Type,
        forKey key: Key,
        _ problems: ConfigurationProblemCollector
    ) -> [String: T]? {
        let elements = self.configValue([String: ConfigurationElement<T>].self, forKey: key, problems)
        return elements.map { map in map.compactMapValues(\.value) }
    }
}

/// Decodes one element of a list or map and never throws, so that a JSON array keeps being
/// read after a bad element (`JSONDecoder` does not move past an element that failed).
struct ConfigurationElement<T: Decodable>: Decodable {
    /// The element, or `nil` when it was invalid (the problem is recorded).
    var value: T?

    /// Decodes the element, recording a failure in the decoder's collector. Without a collector
    /// (a value decoded on its own) the failure is thrown instead.
    init(from decoder: any Decoder) throws {
        do {
            self.value = try T(from: decoder)
        } catch {
            guard let problems = decoder.configurationCollector else { throw error }
            problems.record(
                error,
                at: decoder.codingPath,
                expected: ConfigurationTypeName.of(T.self),
                found: ConfigurationJSONKind.probe(decoder)
            )
            self.value = nil
        }
    }
}
