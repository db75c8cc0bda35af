import Foundation
import Testing

/// Every page of the documentation that another page sends a reader to exists: Markdown
/// links with a relative target, their `#fragment` anchors, and the pages that source
/// comments name. A page names another by a link, not by a path in a code span. And every
/// page under `docs/` is at most two clicks from the README, so a newcomer finds any of them.
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
        try Self.links(of: page).compactMap { $0.fragmentOnly ? nil : $0.file }
    }

    /// A relative Markdown link: the file it points at (the page itself for `#fragment`) and
    /// its fragment, if any.
    private struct Link {
        var file: URL
        var fragment: String?
        var fragmentOnly: Bool
        var text: String
    }

    /// The relative Markdown links of `page`.
    private static func links(of page: URL) throws -> [Link] {
        let link = try Regex(#"\]\(([^)\s]+)\)"#)
        let text = try String(contentsOf: page, encoding: .utf8)
        return text.matches(of: link).compactMap { match in
            guard let target = match.output[1].substring.map(String.init) else { return nil }
            if target.contains("://") || target.hasPrefix("mailto:") { return nil }
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let path = String(parts[0])
            let fragment = parts.count > 1 ? String(parts[1]) : nil
            let file = path.isEmpty ? page : page.deletingLastPathComponent().appendingPathComponent(path)
            return Link(file: file.standardizedFileURL, fragment: fragment, fragmentOnly: path.isEmpty, text: target)
        }
    }

    /// GitHub's anchor for a heading: lowercased, every character other than a letter, a
    /// digit, `-`, `_` or a space dropped, spaces turned into `-`; a link keeps its text.
    static func slug(of heading: String) throws -> String {
        let linkText = try Regex(#"\[([^\]]*)\]\([^)]*\)"#)
        let plain = heading.replacing(linkText) { String($0.output[1].substring ?? "") }
        var slug = ""
        for character in plain.trimmingCharacters(in: .whitespaces).lowercased() {
            if character.isLetter || character.isNumber || character == "-" || character == "_" {
                slug.append(character)
            } else if character == " " {
                slug.append("-")
            }
        }
        return slug
    }

    /// The anchors a Markdown text offers: each heading's slug (a repeated slug gets `-1`,
    /// `-2`, ... as GitHub numbers them), and every `<a id="...">` or `<a name="...">`.
    /// Headings inside fenced code blocks are not headings.
    static func anchors(in text: String) throws -> Set<String> {
        let explicit = try Regex(#"<a (?:id|name)="([^"]+)""#)
        var anchors: Set<String> = []
        var seen: [String: Int] = [:]
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if fenced { continue }
            for match in line.matches(of: explicit) {
                if let id = match.output[1].substring { anchors.insert(String(id)) }
            }
            let hashes = line.prefix { $0 == "#" }.count
            guard (1...6).contains(hashes), line.dropFirst(hashes).first == " " else { continue }
            let slug = try Self.slug(of: String(line.dropFirst(hashes + 1)))
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
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

    @Test func everyAnchorResolvesToAHeadingOrAnAnchor() throws {
        var anchorsOfPage: [String: Set<String>] = [:]
        var missing: [String] = []
        var checked = 0
        for page in Self.pages() {
            for link in try Self.links(of: page) {
                guard let fragment = link.fragment, link.file.pathExtension == "md",
                    FileManager.default.fileExists(atPath: link.file.path)
                else { continue }
                if anchorsOfPage[link.file.path] == nil {
                    anchorsOfPage[link.file.path] = try Self.anchors(
                        in: String(contentsOf: link.file, encoding: .utf8)
                    )
                }
                checked += 1
                if anchorsOfPage[link.file.path]?.contains(fragment) != true {
                    missing.append("\(page.lastPathComponent): \(link.text)")
                }
            }
        }
        #expect(checked > 50)
        #expect(missing.isEmpty, "anchors that no heading or <a id> of the page makes: \(missing)")
    }

    /// The anchor rules themselves: GitHub's slugs, numbered repeats, explicit anchors, and
    /// no headings inside code blocks.
    @Test func anchorsFollowGitHubsSlugs() throws {
        let text = """
            # Command line
            ## `serve`
            ### Signals
            ## Signals
            <a id="listen"></a>
            ```sh
            # not a heading
            ```
            ## 0.2.0 — 2026-11-28
            ## [A link](x.md), then text
            """
        #expect(
            try Self.anchors(in: text) == [
                "command-line", "serve", "signals", "signals-1", "listen", "020--2026-11-28", "a-link-then-text",
            ]
        )
    }

    /// Pages cited in the comments of the sources, scripts and deploy files exist.
    @Test func everyPageNamedInSourceCommentsExists() throws {
        let named = try Regex(#"(?:^|[^\w/.-])((?:docs|deploy|bench|fuzz)/[\w./-]*\.md|CONTRIBUTING\.md)"#)
        let folders = ["Sources", "Tests", "scripts", "bench", "fuzz", "deploy"]
        var files = ["Package.swift", "Dockerfile"].map { Self.root.appendingPathComponent($0) }
        for folder in folders {
            let walker = FileManager.default.enumerator(
                at: Self.root.appendingPathComponent(folder),
                includingPropertiesForKeys: nil
            )
            while let url = walker?.nextObject() as? URL {
                let name = url.lastPathComponent
                // Pages are checked as pages; this file names made-up pages on purpose.
                if url.pathExtension == "md" || name == "DocumentationLinkTests.swift" { continue }
                if ["swift", "sh", "py", "c", "h", "service", "yaml", "txt", "conf", ""].contains(url.pathExtension) {
                    files.append(url)
                }
            }
        }
        var missing: [String] = []
        var cited = 0
        for file in files {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            for match in text.matches(of: named) {
                guard let path = match.output[1].substring.map(String.init) else { continue }
                cited += 1
                if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path) {
                    missing.append("\(file.lastPathComponent): \(path)")
                }
            }
        }
        #expect(cited > 50)
        #expect(missing.isEmpty, "pages named in comments that do not exist: \(missing)")
    }

    /// A page that sends the reader to another page links it: a page path in a code span is
    /// a link's text (`[`docs/x.md`](x.md)`), never a bare path.
    @Test func pagesAreLinkedNotNamedInCodeSpans() throws {
        let bare = try Regex(#"(?:^|[^\[])`((?:\.\./)*[\w./-]+\.md)`"#)
        var bareNames: [String] = []
        for page in Self.pages() {
            var fenced = false
            for line in try String(contentsOf: page, encoding: .utf8).split(separator: "\n") {
                if line.hasPrefix("```") { fenced.toggle() }
                if fenced { continue }
                for match in line.matches(of: bare) {
                    bareNames.append("\(page.lastPathComponent): \(match.output[1].substring ?? "")")
                }
            }
        }
        #expect(bareNames.isEmpty, "page paths in code spans instead of links: \(bareNames)")
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
