import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// `docs/reference/errors.md` lists every code the proxy answers with, with its status.
struct ErrorReferenceTests {
    @Test func everyCodeIsDocumentedWithItsStatus() throws {
        let page = try String(
            contentsOf: ProjectPython.packageRoot.appendingPathComponent("docs/reference/errors.md"),
            encoding: .utf8
        )
        for base in ProxyError.Base.allCases {
            let code = ErrorCode<ProxyError>(base)
            #expect(page.contains("| `\(code)` | \(code.status) |"), "\(code) (\(code.status)) is missing")
        }
        for base in LoginError.Base.allCases {
            #expect(page.contains("`\(base.rawValue)`"), "login error \(base.rawValue) is missing")
        }
        for base in TokenStoreError.Base.allCases {
            #expect(page.contains("`\(base.rawValue)`"), "token store error \(base.rawValue) is missing")
        }
    }
}
