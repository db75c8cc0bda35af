// swift-tools-version:6.0
import Foundation
import PackageDescription

let package = Package(
    name: "tokenproxy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tokenproxy", targets: ["tokenproxy"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    // One target per layer, lowest first; each depends only on the layers below it, so an
    // import that points up a layer does not build (docs/contributing/architecture.md).
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        .target(name: "CSystemShims"),
        .target(
            name: "TokenProxySupport",
            dependencies: [
                "CSystemShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "TokenProxyHTTP", dependencies: ["TokenProxySupport"]),
        .target(name: "TokenProxyConfiguration", dependencies: ["TokenProxySupport"]),
        .target(
            name: "TokenProxyServer",
            dependencies: [
                "CSystemShims", "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenProxyUpstream",
            dependencies: ["CCurl", "CSystemShims", "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration"]
        ),
        .target(
            name: "TokenProxyMetrics",
            dependencies: [
                "TokenProxySupport",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "TokenProxyCredentials",
            dependencies: [
                "CHiredis", "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyUpstream", "TokenProxyMetrics",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenProxyAdmin",
            dependencies: [
                "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyMetrics", "TokenProxyCredentials",
            ]
        ),
        .target(
            name: "TokenProxyForwarding",
            dependencies: [
                "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyUpstream", "TokenProxyMetrics", "TokenProxyCredentials", "TokenProxyAdmin",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenProxyApp",
            dependencies: [
                "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyUpstream", "TokenProxyMetrics", "TokenProxyCredentials", "TokenProxyAdmin",
                "TokenProxyForwarding",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "tokenproxy",
            dependencies: [
                "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyUpstream", "TokenProxyMetrics", "TokenProxyCredentials", "TokenProxyAdmin",
                "TokenProxyForwarding", "TokenProxyApp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenProxyCoreTests",
            dependencies: [
                "CCurl", "TokenProxySupport", "TokenProxyHTTP", "TokenProxyConfiguration", "TokenProxyServer",
                "TokenProxyUpstream", "TokenProxyMetrics", "TokenProxyCredentials", "TokenProxyAdmin",
                "TokenProxyForwarding", "TokenProxyApp",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds of the project's own code (`docs/performance.md`, "Designs measured"):
// - without the run-time exclusivity checks: every mutable field is confined to one context
//   or behind a lock, so an overlapping access is a programming error that the debug builds,
//   which every test runs, still stop at. In release builds the checks cost about 8,000
//   instructions a request.
// - with package cross-module optimization: the layers' `package` functions and types are
//   made available to the layers above for inlining and specialization, as a single module's
//   would be. Without it, the compiler keeps no body of a `package` declaration for another
//   module, `@inlinable` or not (only members of public types are kept), so every generic
//   call between layers ran unspecialized. Package CMO requires library evolution; the
//   package's modules are never used outside it, so their interfaces are not verified.
for target in package.targets where target.type != .system && target.type != .test && !target.name.hasPrefix("C") {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .unsafeFlags(
                [
                    "-enforce-exclusivity=unchecked",
                    "-enable-library-evolution", "-no-verify-emitted-module-interface",
                    "-Xfrontend", "-package-cmo", "-Xfrontend", "-allow-non-resilient-access",
                ],
                .when(configuration: .release)
            )
        ]
}

// The libFuzzer targets over the parsers of outside input (`fuzz/README.md`). They exist only
// when `fuzz/run.sh` builds with TOKENPROXY_FUZZ=1 and the fuzzer sanitizer, which supplies
// their `main`; in the same package, they reach the layers' package and internal parsers.
if ProcessInfo.processInfo.environment["TOKENPROXY_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, layers: [Target.Dependency])] = [
        ("FuzzRequestParser", ["TokenProxySupport", "TokenProxyHTTP"]),
        ("FuzzResponseHead", ["TokenProxyHTTP", "TokenProxyUpstream"]),
        ("FuzzConfiguration", ["TokenProxyConfiguration"]),
        ("FuzzTokenResponse", ["TokenProxyCredentials"]),
        ("FuzzDPoPChallenge", ["TokenProxyCredentials"]),
    ]
    for (name, layers) in fuzzTargets {
        package.targets.append(.executableTarget(name: name, dependencies: layers, path: "fuzz/Sources/\(name)"))
    }
}
