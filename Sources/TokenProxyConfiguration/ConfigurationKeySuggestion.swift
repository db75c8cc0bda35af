import Foundation

/// Suggests the key (or choice) a user probably meant, for "did you mean 'upstream'?" hints.
enum ConfigurationKeySuggestion {
    /// The message for an unknown key, with a suggestion when one of `known` is close.
    static func unknownKeyMessage(_ key: String, known: [String]) -> String {
        guard let suggestion = self.closest(to: key, among: known) else { return "unknown key" }
        return "unknown key; did you mean '\(suggestion)'?"
    }

    /// The message for a string that is none of `choices`, listing them all.
    ///
    /// The rejected value itself is not repeated: it is never a secret for the keys that take
    /// a choice, but a message that never quotes values cannot leak one by mistake.
    static func choiceMessage(_ value: String, choices names: [String]) -> String {
        var message = "must be one of " + names.map { "'\($0)'" }.joined(separator: ", ")
        if let suggestion = self.closest(to: value, among: names) {
            message += "; did you mean '\(suggestion)'?"
        }
        return message
    }

    /// The element of `candidates` closest to `word`, if it is close enough to be a typo: the
    /// same up to case, `_` and `-` (`pathPrefix` for `path_prefix`), or within a small edit
    /// distance that grows with the length of the word.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let folded = self.fold(word)
        if let match = candidates.first(where: { self.fold($0) == folded }) {
            return match
        }
        let limit = max(1, min(3, word.count / 4))
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = self.editDistance(word.lowercased(), candidate.lowercased())
            if distance <= limit, distance < (best?.distance ?? Int.max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// Lowercased, without `_` and `-`.
    private static func fold(_ word: String) -> String {
        String(word.lowercased().filter { $0 != "_" && $0 != "-" })
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and
    /// transpositions of neighbours each cost one.
    static func editDistance(_ left: String, _ right: String) -> Int {
        let a = Array(left)
        let b = Array(right)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, table[i - 2][j - 2] + 1)
                }
                table[i][j] = value
            }
        }
        return table[a.count][b.count]
    }
}
