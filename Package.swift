// swift-tools-version:6.0
import Foundation
import PackageDescription

let package = Package(
    name: "tokenproxy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tokenproxy", targets: ["tokenproxy"]),
        .library(name: "TokenProxyCore", targets: ["TokenProxyCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(name: "CSystemShims"),
        .target(
            name: "TokenProxyCore",
            dependencies: [
                "CCurl",
                "CSystemShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "tokenproxy",
            dependencies: [
                "TokenProxyCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenProxyCoreTests",
            dependencies: [
                "TokenProxyCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer targets over the parsers of outside input (`fuzz/README.md`). They exist only
// when `fuzz/run.sh` builds with TOKENPROXY_FUZZ=1 and the fuzzer sanitizer, which supplies
// their `main`; in the same package, they reach the core's package and internal parsers.
if ProcessInfo.processInfo.environment["TOKENPROXY_FUZZ"] == "1" {
    for name in ["FuzzRequestParser", "FuzzResponseHead", "FuzzConfiguration", "FuzzTokenResponse"] {
        package.targets.append(
            .executableTarget(name: name, dependencies: ["TokenProxyCore"], path: "fuzz/Sources/\(name)")
        )
    }
}
