import ArgumentParser
import Foundation
import TokenProxyConfiguration
import TokenProxyCredentials

/// `tokenproxy login PROVIDER`: an interactive grant whose tokens go to the token store,
/// where a running proxy finds them without a restart.
struct LoginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Run an interactive grant (authorization code, device code, OAuth 1.0a) and store the tokens."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String

    @Option(
        help: """
            Seconds the whole login may take (every request, the wait for the browser, the person or the \
            approval, storing), 1 to 86400; default 300, for device_code until the code expires.
            """
    )
    var timeout: Double?

    @Flag(help: "Print the authorization URL without trying to open a browser.")
    var noBrowser = false

    @Flag(
        help:
            "oauth1: out of band; the provider shows a verifier, read from standard input or given later with --verifier."
    )
    var oob = false

    @Option(help: "oauth1: finish the out-of-band login started with --oob with this verifier.")
    var verifier: String?

    func validate() throws {
        if let timeout = self.timeout, !(timeout >= 1 && timeout <= 86400) {
            throw ValidationError("--timeout must be from 1 to 86400 seconds")
        }
        if self.oob, self.verifier != nil {
            throw ValidationError("--oob starts a login and --verifier finishes one: give one of them")
        }
    }

    func run() throws {
        let context = try CredentialCommandContext(options: self.options)
        let provider = try context.provider(self.provider)
        if context.configuration.tokenStore == .memory {
            // The tokens would be gone when this command exits.
            Console.error("the token store is \"memory\": a login would be lost at once; configure token_store.path")
            throw ExitStatus.configError
        }
        if provider.grant != .oauth1, self.oob || self.verifier != nil {
            Console.error(
                "--oob and --verifier are for oauth1 providers; \(provider.name) uses \(provider.grant.rawValue)"
            )
            throw ExitStatus.configError
        }
        let result: Result<LoginResult, LoginError>
        switch provider.grant {
        case .authorizationCode:
            let login = AuthorizationCodeLogin(
                provider: provider,
                fetcher: context.fetcher,
                store: context.store,
                limits: context.configuration.limits,
                logger: context.logger
            )
            result = login.run(timeout: self.seconds) { prompt in
                Console.error("Open this URL in a browser to sign in to \(provider.name):", "", "  \(prompt.url)", "")
                Console.error("Waiting for the browser to return to \(prompt.redirectURI) ...")
                if !self.noBrowser {
                    Browser.open(prompt.url)
                }
            }
        case .deviceCode:
            let login = DeviceCodeLogin(
                provider: provider,
                fetcher: context.fetcher,
                store: context.store,
                limits: context.configuration.limits
            )
            // The device code's lifetime (a day at most) ends the polling unless --timeout does first.
            result = login.run(timeout: self.timeout ?? 86400) { prompt in
                Console.error("To sign in to \(provider.name), open", "", "  \(prompt.verificationURI)", "")
                Console.error("and enter the code:  \(prompt.userCode)", "")
                if let complete = prompt.verificationURIComplete {
                    Console.error("(or open \(complete), which includes the code)", "")
                }
                Console.error("Waiting for approval (the code expires in \(Int(prompt.expiresIn / 60)) minutes) ...")
            }
        case .oauth1:
            guard let outcome = try self.oauth1(provider, context: context) else { return }
            result = outcome
        default:
            Console.error(
                "provider \"\(provider.name)\" uses the \(provider.grant.rawValue) grant, which needs no login; "
                    + "`tokenproxy token \(provider.name)` shows whether it works"
            )
            throw ExitStatus.configError
        }
        switch result {
        case .failure(let error):
            Console.error("login failed: \(error.message)")
            throw ExitStatus.runtimeFailure
        case .success(let login) where provider.grant == .oauth1:
            _ = login
            Console.error(
                "Signed in to \(provider.name); the token and its secret are stored in \(context.store.location)."
            )
        case .success(let login):
            var details: [String] = []
            if let expiresIn = login.expiresIn { details.append("access token valid for \(Int(expiresIn)) s") }
            details.append(login.hasRefreshToken ? "refresh token stored" : "no refresh token issued")
            if let scope = login.scope { details.append("scope: \(scope)") }
            Console.error(
                "Signed in to \(provider.name); tokens stored in \(context.store.location) (\(details.joined(separator: ", ")))."
            )
        }
    }
}

extension LoginCommand {
    /// The login's whole allowance: `--timeout`, else 300 seconds.
    private var seconds: Double { self.timeout ?? 300 }

    /// The OAuth 1.0a login (docs/guide/oauth1.md, "Signing in"): with the loopback callback, out
    /// of band, or the out-of-band login's second step. Nil when an out-of-band login waits
    /// for `--verifier`.
    private func oauth1(
        _ provider: ProviderConfiguration,
        context: CredentialCommandContext
    ) throws -> Result<LoginResult, LoginError>? {
        if provider.token != nil {
            Console.error(
                "provider \"\(provider.name)\" has a configured token and token_secret, which it signs with; "
                    + "remove them to sign in with `tokenproxy login` instead"
            )
            throw ExitStatus.configError
        }
        if provider.requestTokenURL == nil {
            Console.error(
                "provider \"\(provider.name)\" has no request_token_url, authorize_url and access_token_url: "
                    + "it signs with the configured token and token_secret and needs no login"
            )
            throw ExitStatus.configError
        }
        let login = OAuth1Login(
            provider: provider,
            fetcher: context.fetcher,
            store: context.store,
            limits: context.configuration.limits,
            logger: context.logger
        )
        if let verifier = self.verifier {
            let finished = login.finish(verifier: verifier, timeout: self.seconds)
            if case .failure(let error) = finished, error.code == .exchangeFailed || error.code == .timedOut {
                Console.error(
                    "(the login still waits: `tokenproxy login \(provider.name) --verifier CODE` may be tried again)"
                )
            }
            return finished
        }
        if !self.oob {
            return login.run(timeout: self.seconds) { prompt in
                Console.error("Open this URL in a browser to sign in to \(provider.name):", "", "  \(prompt.url)", "")
                Console.error("Waiting for the browser to return to \(prompt.callback) ...")
                if !self.noBrowser {
                    Browser.open(prompt.url)
                }
            }
        }
        let outcome = login.runOutOfBand(timeout: self.seconds) { prompt in
            Console.error("Open this URL in a browser to sign in to \(provider.name):", "", "  \(prompt.url)", "")
            Console.error("The provider then shows a verifier code. Enter it here (or finish later with")
            Console.error("`tokenproxy login \(provider.name) --verifier CODE`):")
        } verifier: {
            readLine(strippingNewline: true)
        }
        switch outcome {
        case .failure(let error):
            if error.code == .exchangeFailed || error.code == .callbackRejected || error.code == .timedOut {
                Console.error(
                    "(the login still waits: `tokenproxy login \(provider.name) --verifier CODE` may be tried again)"
                )
            }
            return .failure(error)
        case .success(let stored?):
            return .success(stored)
        case .success(nil):
            Console.error(
                "No verifier read; finish with `tokenproxy login \(provider.name) --verifier CODE` within the hour."
            )
            return nil
        }
    }
}

/// Opening a URL in the person's browser when a display is available.
enum Browser {
    static func open(_ url: String) {
        let environment = ProcessEnvironment.variables
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // The URL is printed anyway; a missing xdg-open only means the person copies it.
        try? process.run()
    }
}
