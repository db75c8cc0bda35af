import Foundation

import TokenProxyConfiguration

/// Decodes and validates the input as a configuration file, as `tokenproxy check` does, and
/// renders what `check` and `serve` print for a valid one. Any input may be refused; none may
/// crash. Secrets are not resolved (that reads files and the environment).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    do {
        let configuration = try ProxyConfiguration.decode(
            data,
            environment: ["HOME": "/nonexistent", "XDG_STATE_HOME": "/nonexistent/state"],
            baseDirectory: "/nonexistent"
        )
        _ = configuration.routeTable()
        _ = configuration.warnings
        precondition(configuration.validationProblems().isEmpty, "a decoded configuration has problems")
    } catch {
        precondition(!error.problems.isEmpty, "a refused configuration names no problem")
        for problem in error.problems { _ = problem.description }
    }
    return 0
}
