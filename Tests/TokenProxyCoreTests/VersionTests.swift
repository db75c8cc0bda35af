import Foundation
import Testing
import TokenProxySupport

/// One version everywhere: the `VERSION` file is what the binary reports, and the newest
/// numbered CHANGELOG entry is that version with its release date.
struct VersionTests {
    /// The repository's root, from this file's place in it.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private static func versionFile() throws -> String {
        let url = Self.root.appendingPathComponent("VERSION")
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func theVersionFileIsAReleaseNumber() throws {
        let version = try Self.versionFile()
        #expect(version.wholeMatch(of: try Regex(#"[0-9]+\.[0-9]+\.[0-9]+"#)) != nil, "VERSION: \(version)")
    }

    @Test func theBinaryReportsTheVersionFile() throws {
        let version = try Self.versionFile()
        #expect(TokenProxyVersion.current == version)
        let result = try TokenProxyBinary.run(["--version"])
        #expect(result.status == 0)
        let printed = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // A plain `swift build` records no commit; scripts/build-release.sh records one or
        // none (a release tag): either way the version comes first.
        #expect(printed == version || printed.hasPrefix("\(version) ("), "--version printed \(printed)")
    }

    @Test func theNewestChangelogEntryIsTheVersionWithItsDate() throws {
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let heading = try Regex(#"(?m)^## ([0-9][^ ]*)(?: — ([0-9]{4}-[0-9]{2}-[0-9]{2}))?$"#)
        let newest = try #require(changelog.firstMatch(of: heading))
        #expect(newest.output[1].substring.map(String.init) == (try Self.versionFile()))
        let date = try #require(newest.output[2].substring.map(String.init), "the newest entry has no date")
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.dateFormat = "yyyy-MM-dd"
        #expect(parser.date(from: date) != nil, "not a date: \(date)")
    }
}
