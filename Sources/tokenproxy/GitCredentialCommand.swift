import ArgumentParser
import Foundation
import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenproxy credential git get|store|erase [--provider P]`: a git credential helper
/// (git-credential(1); `docs/guide/git.md`). `get` prints the matching provider's token, or
/// nothing when no route matches, so git asks its next helper; `erase` drops a refused token
/// from the store; `store` does nothing. Other actions are ignored, as git asks of helpers.
struct GitCredentialCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "git",
        abstract: "A git credential helper: prints the token of the route matching git's URL."
    )
    @OptionGroup var options: ConfigOption
    @Option(name: .long, help: "Provider to use instead of matching git's URL against the routes.")
    var provider: String?
    @Argument(help: "The action git asks for: get, store or erase.") var action: String

    func run() throws {
        guard self.action == "get" || self.action == "erase" else { return }
        let request: GitCredentialRequest
        do {
            request = try GitCredentialRequest.parse(Self.readInput())
        } catch {
            Console.error(error.description)
            throw ExitStatus.runtimeFailure
        }
        let context = try CredentialCommandContext(options: self.options)
        let name: String
        if let chosen = self.provider {
            name = chosen
        } else if let matched = GitCredentialMatcher(routes: context.configuration.routes).provider(for: request) {
            name = matched
        } else {
            return
        }
        let provider = try context.provider(name)
        if self.action == "erase" {
            guard let secret = request.secret else { return }
            do {
                _ = try context.store.eraseAccessToken(provider: name, value: secret)
            } catch {
                Console.error("cannot update the token store: \(error.description)")
                throw ExitStatus.runtimeFailure
            }
            return
        }
        let token = try context.token(of: name).token
        // A DPoP-bound token is useless without a proof of each request, which git cannot make.
        guard token.binding == nil else {
            Console.error("provider \(name) has a DPoP-bound token, which git cannot send: use a route of the proxy")
            throw ExitStatus.runtimeFailure
        }
        let response = GitCredentialResponse(
            token: token.value,
            username: provider.gitUsername,
            expiresAt: GitCredentialResponse.wallClock(token.expiresAt),
            bearer: request.acceptsAuthtype
        )
        print(response.text, terminator: "")
    }

    /// Reads stdin up to the blank line that ends git's attributes or the end of input,
    /// at most one byte past the parser's limit (which then refuses it).
    private static func readInput() -> [UInt8] {
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while input.count <= GitCredentialRequest.maxBytes {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            input.append(contentsOf: buffer[..<count])
            if input.starts(with: [UInt8(ascii: "\n")]) || Self.hasBlankLine(input) { break }
        }
        return Array(input.prefix(GitCredentialRequest.maxBytes + 1))
    }

    private static func hasBlankLine(_ input: [UInt8]) -> Bool {
        var previous: UInt8 = 0
        for byte in input {
            if byte == UInt8(ascii: "\n"), previous == UInt8(ascii: "\n") { return true }
            if byte != UInt8(ascii: "\r") { previous = byte }
        }
        return false
    }
}
