import Foundation
import Testing

/// Every page of the documentation that another page sends a reader to exists: Markdown
/// links with a relative target, and `docs/....md` paths named in code spans. And every page
/// under `docs/` is at most two clicks from the README, so a newcomer finds any of them.
struct DocumentationLinkTests {
    /// The repository's root, from this file's place in it.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every Markdown file under `folder` of `root`, at any depth.
    private static func markdownFiles(under folder: String, of root: URL) -> [URL] {
        let base = root.appendingPathComponent(folder)
        let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
        var pages: [URL] = []
        while let url = walker?.nextObject() as? URL {
            if url.pathExtension == "md" { pages.append(url.standardizedFileURL) }
        }
        return pages
    }

    private static func pages() -> [URL] {
        var pages = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"].map { Self.root.appendingPathComponent($0) }
        for folder in ["docs", "deploy", "bench", "fuzz"] {
            pages += Self.markdownFiles(under: folder, of: Self.root)
        }
        return pages.filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// The files that the relative Markdown links of `page` point at (anchors dropped).
    private static func linkTargets(of page: URL) throws -> [URL] {
        let link = try Regex(#"\]\(([^)\s]+)\)"#)
        let text = try String(contentsOf: page, encoding: .utf8)
        return text.matches(of: link).compactMap { match in
            guard let target = match.output[1].substring.map(String.init) else { return nil }
            if target.hasPrefix("#") || target.contains("://") || target.hasPrefix("mailto:") { return nil }
            let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
            return page.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
        }
    }

    /// The Markdown pages under `root/docs` that are more than `hops` links away from
    /// `root/README.md`, following relative Markdown links between existing pages.
    static func pagesBeyond(hops: Int, from root: URL) throws -> [String] {
        var reached: Set<String> = []
        var frontier = [root.appendingPathComponent("README.md").standardizedFileURL]
        for _ in 0..<hops {
            var next: [URL] = []
            for page in frontier where FileManager.default.fileExists(atPath: page.path) {
                for target in try Self.linkTargets(of: page)
                where target.pathExtension == "md" && reached.insert(target.path).inserted {
                    next.append(target)
                }
            }
            frontier = next
        }
        let prefix = root.standardizedFileURL.path + "/"
        return Self.markdownFiles(under: "docs", of: root).map(\.path).filter { !reached.contains($0) }
            .map { String($0.dropFirst(prefix.count)) }.sorted()
    }

    @Test func everyRelativeLinkAndNamedPageResolves() throws {
        let named = try Regex(#"`(docs/[^`\s]+\.md)"#)
        var missing: [String] = []
        let pages = Self.pages()
        #expect(pages.count > 10)
        #expect(pages.contains { $0.path.contains("/docs/guide/") })
        #expect(pages.contains { $0.path.contains("/docs/contributing/") })
        for page in pages {
            for target in try Self.linkTargets(of: page) where !FileManager.default.fileExists(atPath: target.path) {
                missing.append("\(page.lastPathComponent): \(target.path)")
            }
            let text = try String(contentsOf: page, encoding: .utf8)
            for match in text.matches(of: named) {
                guard let path = match.output[1].substring.map(String.init) else { continue }
                if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path) {
                    missing.append("\(page.lastPathComponent): \(path)")
                }
            }
        }
        #expect(missing.isEmpty, "\(missing)")
    }

    @Test func everyDocsPageIsWithinTwoLinksOfTheReadme() throws {
        #expect(Self.markdownFiles(under: "docs", of: Self.root).count > 20)
        let unreached = try Self.pagesBeyond(hops: 2, from: Self.root)
        #expect(unreached.isEmpty, "not linked within two clicks of README.md: \(unreached)")
    }

    /// The reachability check itself, on a small tree of real files: a page three links
    /// away, and one nothing links to, are reported; the others are not.
    @Test func theTwoLinkCheckReportsPagesFurtherAway() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("doclinks-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let pages = [
            "README.md": "[guides](docs/guide/README.md) and [an index](docs/index.md#top)",
            "docs/index.md": "[reference](reference/a.md)",
            "docs/guide/README.md": "[a task](task.md)",
            "docs/guide/task.md": "[deeper](../deep.md)",
            "docs/reference/a.md": "[back](../../README.md)",
            "docs/deep.md": "three links from the README",
            "docs/orphan.md": "nothing links here",
        ]
        for (path, text) in pages {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(text.utf8).write(to: url)
        }
        #expect(try Self.pagesBeyond(hops: 2, from: root) == ["docs/deep.md", "docs/orphan.md"])
        #expect(try Self.pagesBeyond(hops: 3, from: root) == ["docs/orphan.md"])
    }
}
