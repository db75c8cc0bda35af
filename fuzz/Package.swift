// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets over tokenproxy's parsers of outside input. Built by `run.sh` with
// `swift build --sanitize=fuzzer --sanitize=address` in debug, where the main package is
// compiled with testing enabled, so the targets reach its internal parsers through
// `@testable import`.
let package = Package(
    name: "tokenproxy-fuzz",
    dependencies: [.package(name: "tokenproxy", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzRequestParser",
            dependencies: [.product(name: "TokenProxyCore", package: "tokenproxy")]
        ),
        .executableTarget(
            name: "FuzzResponseHead",
            dependencies: [.product(name: "TokenProxyCore", package: "tokenproxy")]
        ),
        .executableTarget(
            name: "FuzzConfiguration",
            dependencies: [.product(name: "TokenProxyCore", package: "tokenproxy")]
        ),
        .executableTarget(
            name: "FuzzTokenResponse",
            dependencies: [.product(name: "TokenProxyCore", package: "tokenproxy")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
