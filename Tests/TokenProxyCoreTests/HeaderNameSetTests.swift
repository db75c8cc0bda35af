import Testing

@testable import TokenProxyHTTP

struct HeaderNameSetTests {
    @Test func membersMatchIgnoringCaseAndOthersDoNot() {
        let set = HeaderNameSet([
            "connection", "te", "x-a-name-longer-than-sixty-three-bytes-that-shares-the-last-length-bit",
        ])
        #expect(set.contains("Connection"))
        #expect(set.contains("TE"))
        #expect(set.contains("X-A-Name-Longer-Than-Sixty-Three-Bytes-That-Shares-The-Last-Length-Bit"))
        #expect(!set.contains("Connectio"))
        #expect(!set.contains("tf"))
        #expect(!set.contains(""))
        // Longer names share the last length bit, so they are compared in full.
        #expect(!set.contains("x-a-name-longer-than-sixty-three-bytes-that-shares-the-last-length-bit-too"))
    }
}
