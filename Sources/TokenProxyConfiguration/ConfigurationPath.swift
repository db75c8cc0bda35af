import Foundation

/// Builds the JSON paths that name a configuration value in problems: object keys joined with
/// `.`, array indices as `[n]` (`routes[2].upstream`, `providers.github.client_id`).
enum ConfigurationPath {
    /// The path of a decoder's coding path.
    static func of(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path = self.join(path, key.stringValue)
            }
        }
        return path
    }

    /// `parent.child`, `parent[n]` when the child is an index, or either one alone when the other is empty.
    static func join(_ parent: String, _ child: String) -> String {
        if parent.isEmpty { return child }
        if child.isEmpty { return parent }
        if child.hasPrefix("[") { return parent + child }
        return parent + "." + child
    }

    /// The path of element `index` of the list at `parent`.
    static func index(_ parent: String, _ index: Int) -> String {
        parent + "[\(index)]"
    }

    /// `problems` grouped by where they are in a document: top-level keys in the order of
    /// `topLevelKeys` (others last), then by route index or provider name; problems in the
    /// same group keep their order.
    static func sorted(_ problems: [ConfigurationProblem], topLevelKeys: [String]) -> [ConfigurationProblem] {
        func location(_ path: String) -> (rank: Int, index: Int, name: String) {
            let top = path.prefix { $0 != "." && $0 != "[" }
            let rank = path.isEmpty ? -1 : (topLevelKeys.firstIndex(of: String(top)) ?? topLevelKeys.count)
            var rest = path.dropFirst(top.count)
            if rest.hasPrefix("[") {
                let digits = rest.dropFirst().prefix { $0 != "]" }
                return (rank, Int(digits) ?? 0, "")
            }
            rest = rest.dropFirst()
            return (rank, 0, String(rest.prefix { $0 != "." && $0 != "[" }))
        }
        return problems.enumerated()
            .sorted { left, right in
                let (a, b) = (location(left.element.path), location(right.element.path))
                if a.rank != b.rank { return a.rank < b.rank }
                if a.index != b.index { return a.index < b.index }
                if a.name != b.name { return a.name < b.name }
                return left.offset < right.offset
            }
            .map(\.element)
    }
}

/// A coding key for any JSON object member, used to list the keys actually present (unknown
/// keys are errors) and to walk objects whose keys are names (`providers`, `add_headers`).
struct ConfigurationCodingKey: CodingKey, Hashable, Sendable {
    /// The member name.
    var stringValue: String
    /// Set only for array positions; object keys never have one, even when they look numeric.
    var intValue: Int?

    /// A key for the object member `stringValue`.
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    /// A key for array position `intValue`.
    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    /// A key for the object member `name`.
    init(_ name: String) {
        self.init(stringValue: name)
    }
}
