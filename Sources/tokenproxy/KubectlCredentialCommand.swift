import ArgumentParser
import Foundation
import TokenProxyCredentials

/// `tokenproxy credential kubectl [--provider P]`: a client-go exec credential plugin. It
/// prints an `ExecCredential` with the provider's token, in the API version named by
/// `$KUBERNETES_EXEC_INFO` (`client.authentication.k8s.io/v1` without it), and nothing else
/// on stdout; every message goes to stderr (`docs/guide/kubectl.md`).
struct KubectlCredentialCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kubectl",
        abstract: "A kubectl exec credential plugin: print an ExecCredential with the provider's token."
    )
    @OptionGroup var options: ConfigOption
    @Option(help: "Provider name (optional when the configuration has exactly one provider).")
    var provider: String?

    func run() throws {
        let execInfo = ProcessEnvironment.variables["KUBERNETES_EXEC_INFO"]
        let apiVersion: ExecCredential.APIVersion
        switch ExecCredential.apiVersion(execInfo: execInfo) {
        case .success(let version):
            apiVersion = version
        case .failure(let error):
            Console.error(error.message)
            throw ExitStatus.runtimeFailure
        }
        let context = try CredentialCommandContext(options: self.options)
        let name = try self.providerName(in: context)
        _ = try context.provider(name)
        let token = try context.token(of: name).token
        // A DPoP-bound token is useless without a proof of each request, which client-go
        // cannot make.
        guard token.binding == nil else {
            Console.error(
                "provider \(name) has a DPoP-bound token, which kubectl cannot send: use a route of the proxy"
            )
            throw ExitStatus.runtimeFailure
        }
        // The expiry is kept on the monotonic clock; the wall-clock time is now plus what
        // is left of it.
        let expiration = token.expiresAt.map { expiresAt -> Date in
            let left = expiresAt - ContinuousClock.now
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18
            return Date().addingTimeInterval(seconds)
        }
        let credential = ExecCredential(apiVersion: apiVersion, token: token.value, expiration: expiration)
        FileHandle.standardOutput.write(Data(credential.json))
    }

    /// `--provider`, or the only configured provider; otherwise exit 2 naming the choices.
    private func providerName(in context: CredentialCommandContext) throws -> String {
        if let provider = self.provider { return provider }
        let names = context.configuration.providers.keys.sorted()
        guard names.count == 1, let only = names.first else {
            let known = names.isEmpty ? "none" : names.joined(separator: ", ")
            Console.error(
                "--provider is required unless the configuration has exactly one provider; configured: \(known)"
            )
            throw ExitStatus.configError
        }
        return only
    }
}
