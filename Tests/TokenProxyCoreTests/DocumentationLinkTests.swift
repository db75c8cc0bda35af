import Foundation
import Testing

/// Every page of the documentation that another page sends a reader to exists: Markdown
/// links with a relative target, and `docs/....md` paths named in code spans.
struct DocumentationLinkTests {
    /// The repository's root, from this file's place in it.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private static func pages() -> [URL] {
        var pages = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"].map { Self.root.appendingPathComponent($0) }
        for folder in ["docs", "deploy", "bench", "fuzz"] {
            let base = Self.root.appendingPathComponent(folder)
            let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
            while let url = walker?.nextObject() as? URL {
                if url.pathExtension == "md" { pages.append(url) }
            }
        }
        return pages.filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    @Test func everyRelativeLinkAndNamedPageResolves() throws {
        let link = try Regex(#"\]\(([^)\s]+)\)"#)
        let named = try Regex(#"`(docs/[^`\s]+\.md)"#)
        var missing: [String] = []
        let pages = Self.pages()
        #expect(pages.count > 10)
        for page in pages {
            let text = try String(contentsOf: page, encoding: .utf8)
            for match in text.matches(of: link) {
                guard let target = match.output[1].substring.map(String.init) else { continue }
                if target.hasPrefix("#") || target.contains("://") || target.hasPrefix("mailto:") { continue }
                let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
                let resolved = page.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                if !FileManager.default.fileExists(atPath: resolved.path) {
                    missing.append("\(page.lastPathComponent): \(target)")
                }
            }
            for match in text.matches(of: named) {
                guard let path = match.output[1].substring.map(String.init) else { continue }
                if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path) {
                    missing.append("\(page.lastPathComponent): \(path)")
                }
            }
        }
        #expect(missing.isEmpty, "\(missing)")
    }
}
