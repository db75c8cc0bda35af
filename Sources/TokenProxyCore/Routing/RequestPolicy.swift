import Foundation

/// The request checks that come before routing: what a client may ask of a deputy holding
/// someone's credentials (SPEC "Security rules"). Pure: no I/O beyond resolving the
/// `require_header` secret.
public struct RequestPolicy: Sendable {
    private struct AllowedHost: Sendable, Equatable {
        var host: String
        var port: String?
    }

    private let allowedHosts: [AllowedHost]?
    private let requireHeader: HeaderRequirement?

    /// Creates the policy; `allowedHosts` of `["*"]` disables the Host check.
    public init(allowedHosts: [String], requireHeader: HeaderRequirement?) {
        if allowedHosts.contains("*") {
            self.allowedHosts = nil
        } else {
            self.allowedHosts = allowedHosts.map { entry in
                let (host, port) = HostName.normalize(entry)
                return AllowedHost(host: host, port: port)
            }
        }
        self.requireHeader = requireHeader
    }

    /// Whether `authority` (`host[:port]`) is an allowed host.
    public func isAllowed(authority: String) -> Bool {
        guard let allowedHosts = self.allowedHosts else { return true }
        let (host, port) = HostName.normalize(authority)
        return allowedHosts.contains { $0.host == host && ($0.port == nil || $0.port == port) }
    }

    /// The checks every request gets, admin probes included: methods, the absolute-form
    /// authority, and request-target sanity.
    public func checkRequest(_ head: HTTPRequestHead) -> ProxyError? {
        // CONNECT would make us a tunnel and TRACE would echo the injected credential.
        if head.method == "CONNECT" || head.method == "TRACE" {
            return ProxyError(.methodNotAllowed, "\(head.method) is not served by tokenproxy")
        }
        if head.headers.values("Authorization").count > 1 {
            return ProxyError(.badRequest, "more than one Authorization header")
        }
        if head.targetForm == .asterisk {
            return ProxyError(.noRoute, "no route for *")
        }
        if Self.hasDotSegment(head.path) {
            // Dot-segments would let a client climb out of a route's upstream base path.
            return ProxyError(.badRequest, "the path contains a '.' or '..' segment")
        }
        return nil
    }

    /// The checks that guard credentials: allowed hosts (DNS-rebinding defence), browser
    /// cross-site requests, and the `require_header` shared secret.
    public func checkAccess(_ head: HTTPRequestHead) -> ProxyError? {
        if case .absolute(let authority) = head.targetForm, !self.isAllowed(authority: authority) {
            return ProxyError(.hostNotAllowed, "the request target's host is not an allowed host")
        }
        if let host = head.headers.first("Host"), !self.isAllowed(authority: host) {
            return ProxyError(.hostNotAllowed, "Host '\(host)' is not in allowed_hosts")
        }
        if let origin = head.headers.first("Origin"), !self.isAllowedOrigin(origin) {
            return ProxyError(.crossSiteRequest, "requests from origin '\(origin)' are refused")
        }
        if let site = head.headers.first("Sec-Fetch-Site"), site.equalsIgnoringASCIICase("cross-site") {
            return ProxyError(.crossSiteRequest, "cross-site browser requests are refused")
        }
        if let requirement = self.requireHeader {
            let expected = try? requirement.value.resolve()
            let given = head.headers.values(requirement.name)
            guard let expected, given.count == 1, ConstantTime.equals(given[0], expected) else {
                return ProxyError(.headerRequired, "the \(requirement.name) header is missing or wrong")
            }
        }
        return nil
    }

    /// An Origin is allowed when it is `http(s)://` plus an allowed host; `null` never is.
    private func isAllowedOrigin(_ origin: String) -> Bool {
        let lowered = origin.lowercased()
        let rest: Substring
        if lowered.hasPrefix("http://") {
            rest = lowered.dropFirst(7)
        } else if lowered.hasPrefix("https://") {
            rest = lowered.dropFirst(8)
        } else {
            return false
        }
        guard !rest.isEmpty, !rest.contains("/") else { return false }
        return self.isAllowed(authority: String(rest))
    }

    /// Whether any segment of `path` is `.` or `..`, literally or percent-encoded
    /// (`%2e`, `%2E`). Scans the bytes once: this runs for every request.
    static func hasDotSegment(_ path: String) -> Bool {
        let bytes = path.utf8
        var index = bytes.startIndex
        var dots = 0
        var other = false
        while true {
            guard index != bytes.endIndex, bytes[index] != UInt8(ascii: "/") else {
                if !other, dots == 1 || dots == 2 { return true }
                if index == bytes.endIndex { return false }
                dots = 0
                other = false
                bytes.formIndex(after: &index)
                continue
            }
            if bytes[index] == UInt8(ascii: ".") {
                dots += 1
                bytes.formIndex(after: &index)
            } else if bytes[index] == UInt8(ascii: "%"), Self.isEncodedDot(bytes[index...].dropFirst()) {
                dots += 1
                bytes.formIndex(&index, offsetBy: 3)
            } else {
                other = true
                bytes.formIndex(after: &index)
            }
        }
    }

    /// Whether `rest` starts with `2e` or `2E`, the rest of a percent-encoded dot.
    private static func isEncodedDot(_ rest: Substring.UTF8View.SubSequence) -> Bool {
        var iterator = rest.makeIterator()
        return iterator.next() == UInt8(ascii: "2") && iterator.next().map { $0 | 0x20 } == UInt8(ascii: "e")
    }
}

/// Comparison whose duration does not depend on where two secrets first differ.
enum ConstantTime {
    /// Whether `a` equals `b`, examining every byte of the longer input.
    static func equals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for index in 0..<max(x.count, y.count) {
            let left = index < x.count ? x[index] : 0
            let right = index < y.count ? y[index] : 0
            difference |= left ^ right
        }
        return difference == 0 && x.count == y.count
    }
}
