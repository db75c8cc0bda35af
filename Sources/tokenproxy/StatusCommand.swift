import ArgumentParser
import TokenProxyCredentials
import TokenProxySupport

/// `tokenproxy status`: a table of providers from the token store. Reads only; never shows a
/// token.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each provider's grant, token presence, expiry and last error."
    )
    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration = try ConfigLoader.load(self.options.path)
        let store = configuration.tokenStore.makeStore()
        var contents = TokenStoreContents()
        var failed = false
        do {
            contents = try store.read()
        } catch {
            Console.error("\(error)")
            failed = true
        }
        var rows = [["PROVIDER", "GRANT", "TOKEN", "EXPIRES IN", "LAST ERROR"]]
        for status in ProviderStatus.all(configuration, contents: contents) {
            rows.append([
                status.name, status.grant.rawValue, Self.tokenColumn(status), Self.expiry(status.expiresIn),
                status.lastError.map { Self.shortened(TextEscaping.escape($0)) } ?? "-",
            ])
        }
        print(Self.table(rows), terminator: "")
        for status in ProviderStatus.all(configuration, contents: contents) {
            if let thumbprint = status.dpopThumbprint {
                print("\(TextEscaping.escape(status.name)): DPoP key jkt \(thumbprint)")
            }
        }
        print("token store: \(TextEscaping.escape(store.location))")
        if let problem = store.unavailability() {
            // What was read came from this process's memory: nothing the fleet shares.
            Console.error(
                "token store unreachable, the table shows none of its tokens: \(TextEscaping.escape(problem))"
            )
            failed = true
        }
        if !contents.pendingRevocations.isEmpty {
            print(
                "pending revocations: \(contents.pendingRevocations.count) (retried by the next `tokenproxy logout`)"
            )
        }
        if failed {
            throw ExitStatus.runtimeFailure
        }
    }

    private static func tokenColumn(_ status: ProviderStatus) -> String {
        if status.loginRequired { return "login required" }
        switch (status.hasAccessToken, status.hasRefreshToken) {
        case (true, true): return "access+refresh"
        case (true, false): return "access"
        case (false, true): return "refresh"
        case (false, false):
            switch status.grant {
            case .staticToken, .command, .oauth1: return "n/a"
            default: return "none"
            }
        }
    }

    private static func expiry(_ seconds: Double?) -> String {
        guard let seconds else { return "-" }
        if !(seconds > 0) { return "expired" }
        // The store's dates are bounded when read; ten years is shown as it is.
        let whole = Int(min(seconds, 1e12))
        if whole >= 3600 { return "\(whole / 3600)h\(String(format: "%02d", whole % 3600 / 60))m" }
        if whole >= 60 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole)s"
    }

    private static func shortened(_ text: String) -> String {
        text.count > 60 ? String(text.prefix(57)) + "..." : text
    }

    /// The rows as aligned columns, each cell's control characters escaped first (a last
    /// error quotes the token endpoint), so that a row is one line and the widths hold.
    private static func table(_ cells: [[String]]) -> String {
        let rows = cells.map { row in row.map { TextEscaping.escape($0) } }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index] + 2, withPad: " ", startingAt: 0)
            }.joined()
        }.joined(separator: "\n") + "\n"
    }
}
