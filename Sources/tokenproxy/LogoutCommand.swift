import ArgumentParser
import TokenProxyCredentials

/// `tokenproxy logout PROVIDER`: revokes (RFC 7009) and deletes the stored tokens. Exits 1
/// when a revocation is still pending or was refused, so scripts notice a token that may
/// still be live at the provider.
struct LogoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke the provider's tokens and delete them from the store."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String

    func run() throws {
        let context = try CredentialCommandContext(options: self.options)
        let provider = try context.provider(self.provider)
        let logout = Logout(
            provider: provider,
            fetcher: context.fetcher,
            store: context.store,
            limits: context.configuration.limits
        )
        let report: Logout.Report
        switch logout.run() {
        case .failure(let error):
            Console.error("logout failed: \(error)")
            throw ExitStatus.runtimeFailure
        case .success(let done):
            report = done
        }
        if let failure = report.discoveryFailure {
            Console.error(
                "cannot find the revocation endpoint of \(provider.name) (\(failure)); nothing was revoked or "
                    + "deleted, try again later"
            )
            throw ExitStatus.runtimeFailure
        }
        if !report.hadTokens, report.hadWaitingLogin {
            Console.error(
                "no tokens were stored for \(provider.name); deleted the out-of-band login waiting for --verifier"
            )
        } else if !report.hadTokens {
            Console.error("no tokens were stored for \(provider.name)")
        } else if report.otherSettings {
            Console.error(
                "deleted tokens of \(provider.name) obtained under earlier settings (another issuer, client or "
                    + "endpoint) without revoking them: they are not sent to the current endpoint"
            )
        } else if provider.grant == .oauth1 {
            // RFC 5849 defines no revocation.
            Console.error(
                "deleted the token of \(provider.name); OAuth 1.0a has no revocation, so the token stays valid "
                    + "at the provider until it is revoked there (usually in the account's application settings)"
            )
        } else if report.noRevocationEndpoint {
            Console.error(
                "deleted the tokens of \(provider.name); the provider has no revocation endpoint "
                    + "(set revocation_url), so they stay valid there until they expire"
            )
        } else {
            let revoked = report.revoked.isEmpty ? "nothing" : report.revoked.joined(separator: " and ")
            Console.error("revoked \(revoked) and deleted the tokens of \(provider.name)")
        }
        for pending in report.pending {
            Console.error(
                "revocation failed (\(pending)); the token is deleted here but may still be valid at the provider: "
                    + "kept as a pending revocation, sent again by the next `tokenproxy logout`"
            )
        }
        for refused in report.refused {
            Console.error("revocation refused: \(refused)")
        }
        if report.retriedPending > 0 {
            Console.error("sent \(report.retriedPending) earlier pending revocation(s)")
        }
        if !report.pending.isEmpty || !report.refused.isEmpty {
            throw ExitStatus.runtimeFailure
        }
    }
}
