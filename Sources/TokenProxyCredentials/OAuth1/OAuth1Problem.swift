/// The `oauth_problem` a provider names in a `WWW-Authenticate: OAuth …` challenge (the
/// OAuth Problem Reporting extension to RFC 5849).
enum OAuth1Problem {
    /// Problems that mean the access token itself is no good.
    static let tokenProblems: Set<String> = ["token_rejected", "token_revoked", "token_expired", "token_used"]

    /// The first `oauth_problem` value in `challenges`, when it is a plain token (letters,
    /// digits and `_`, at most 64 characters), so nothing else of an upstream's text is
    /// repeated.
    static func named(in challenges: [String]) -> String? {
        for challenge in challenges {
            guard let start = challenge.range(of: "oauth_problem=") else { continue }
            let value = challenge[start.upperBound...].drop { $0 == "\"" }.prefix {
                $0 != "\"" && $0 != "," && $0 != " "
            }
            if let problem = Self.plain(value) {
                return problem
            }
        }
        return nil
    }

    /// The `oauth_problem` of a form-encoded answer (a token endpoint's refusal), when it is
    /// a plain token.
    static func named(inForm pairs: [(String, String)]) -> String? {
        pairs.first { $0.0 == "oauth_problem" }.flatMap { Self.plain($0.1) }
    }

    /// `value` when it is a plain problem name: letters, digits and `_`, 64 at most.
    private static func plain(_ value: some StringProtocol) -> String? {
        guard !value.isEmpty, value.count <= 64,
            value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        else { return nil }
        return String(value)
    }
}
