import ArgumentParser

/// `tokenproxy credential …`: credential helpers for programs that must talk to the real
/// host and ask a helper for their credential (`docs/reference/cli.md`).
struct CredentialCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: "Credential helpers for programs that ask a helper for their token.",
        subcommands: [GitCredentialCommand.self, KubectlCredentialCommand.self]
    )
}
