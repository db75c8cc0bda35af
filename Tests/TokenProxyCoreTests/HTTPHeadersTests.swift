import Testing

@testable import TokenProxyHTTP

struct HTTPHeadersTests {
    private func bytes(_ name: String, _ value: [UInt8]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        Array(name.utf8).withUnsafeBytes { name in
            value.withUnsafeBytes { value in headers.add(name: name, value: value) }
        }
        return headers
    }

    @Test func lookUpsIgnoreCaseAndKeepOrderAndDuplicates() {
        let headers = HTTPHeaders([("Accept", "a"), ("X-Many", "1"), ("x-many", "2"), ("Host", "h")])
        #expect(headers.count == 4)
        #expect(headers.first("ACCEPT") == "a")
        #expect(headers.values("X-MANY") == ["1", "2"])
        #expect(headers.contains("host"))
        #expect(!headers.contains("hos"))
        #expect(!headers.contains("hosts"))
        #expect(headers.first("Missing") == nil)
        #expect(headers.map(\.name) == ["Accept", "X-Many", "x-many", "Host"])
        #expect(headers.map(\.value) == ["a", "1", "2", "h"])
    }

    @Test func removingAndReplacingKeepTheOthersInOrder() {
        var headers = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3"), ("C", "4")])
        headers.replaceOrAdd(name: "A", value: "5")
        #expect(headers == HTTPHeaders([("B", "2"), ("C", "4"), ("A", "5")]))
        headers.removeAll { HTTPHeaders.name($0, equals: "b") || HTTPHeaders.name($0, equals: "c") }
        #expect(headers == HTTPHeaders([("A", "5")]))
        headers.remove(name: "a")
        #expect(headers.count == 0)
        #expect(headers == HTTPHeaders())
    }

    @Test func aReplacedValueKeepsItsFieldsNameAndPlace() {
        var headers = HTTPHeaders([("A", "1"), ("Location", "/old"), ("B", "2"), ("location", "/other")])
        headers.replaceValues { name, value in
            HTTPHeaders.name(name, equals: "location") ? "/new" + String(decoding: value, as: UTF8.self) : nil
        }
        #expect(headers == HTTPHeaders([("A", "1"), ("Location", "/new/old"), ("B", "2"), ("location", "/new/other")]))
        headers.removeAll { _, value in value.first == UInt8(ascii: "/") }
        #expect(headers == HTTPHeaders([("A", "1"), ("B", "2")]))
    }

    @Test func fieldsAddedAsBytesEqualFieldsAddedAsStrings() {
        #expect(self.bytes("Accept", Array("text/plain".utf8)) == HTTPHeaders([("Accept", "text/plain")]))
        #expect(self.bytes("Accept", Array("text/plain".utf8)) != HTTPHeaders([("accept", "text/plain")]))
        #expect(self.bytes("Accept", []) == HTTPHeaders([("Accept", "")]))
        // Equality reads the fields only, not the bytes that removed fields left behind.
        var withRemoved = HTTPHeaders([("X-Gone", "long value"), ("Accept", "text/plain")])
        withRemoved.remove(name: "X-Gone")
        #expect(withRemoved == HTTPHeaders([("Accept", "text/plain")]))
    }

    @Test func bytesThatAreNotUTF8AreKeptAsTheyCame() {
        let value: [UInt8] = [0x61, 0xE9, 0x62]  // "a", obs-text, "b" (RFC 9110 §5.5)
        var seen: [UInt8] = []
        self.bytes("X-Latin1", value).forEachField { _, bytes in seen = Array(bytes) }
        #expect(seen == value)
    }

    @Test func aFoldedLineJoinsTheLastValueWhereverItLies() {
        var headers = HTTPHeaders([("A", "1"), ("B", "2")])
        Array(" more".utf8).withUnsafeBytes { headers.appendToLastValue($0) }
        #expect(headers == HTTPHeaders([("A", "1"), ("B", "2 more")]))
        // After a removal the last value is no longer at the end of the storage.
        var moved = HTTPHeaders([("A", "1"), ("B", "2")])
        moved.remove(name: "B")
        Array("+x".utf8).withUnsafeBytes { moved.appendToLastValue($0) }
        #expect(moved == HTTPHeaders([("A", "1+x")]))
        // Moved to the end, it grows in place from then on, and later fields follow it.
        Array("+y".utf8).withUnsafeBytes { moved.appendToLastValue($0) }
        moved.add(name: "C", value: "3")
        #expect(moved == HTTPHeaders([("A", "1+x+y"), ("C", "3")]))
        #expect(moved.map(\.value) == ["1+x+y", "3"])
        var empty = HTTPHeaders()
        Array("x".utf8).withUnsafeBytes { empty.appendToLastValue($0) }
        #expect(empty.count == 0)
    }

    @Test func aCopyIsIndependentOfTheListItCameFrom() {
        let original = HTTPHeaders([("A", "1"), ("B", "2")])
        var added = original
        added.add(name: "C", value: "3")
        var removed = original
        removed.remove(name: "A")
        var folded = original
        Array(" more".utf8).withUnsafeBytes { folded.appendToLastValue($0) }
        var grown = original
        for index in 0..<200 {
            grown.add(name: "X-\(index)", value: String(repeating: "v", count: index))
        }
        #expect(original == HTTPHeaders([("A", "1"), ("B", "2")]))
        #expect(added == HTTPHeaders([("A", "1"), ("B", "2"), ("C", "3")]))
        #expect(removed == HTTPHeaders([("B", "2")]))
        #expect(folded == HTTPHeaders([("A", "1"), ("B", "2 more")]))
        #expect(grown.count == 202)
        #expect(grown.first("X-199") == String(repeating: "v", count: 199))
        #expect(grown.first("b") == "2")
    }

    @Test func tokensAreTrimmedLowercasedAndNonEmpty() {
        let headers = HTTPHeaders([("Connection", " Keep-Alive ,, X-Private"), ("connection", "close")])
        #expect(headers.tokens("Connection") == ["keep-alive", "x-private", "close"])
    }

    /// Fields whose records are laid out on the stack and fields too large for it are
    /// stored alike, in order, next to each other.
    @Test func fieldsOfEverySizeAreKeptByteForByte() {
        let lengths = [0, 1, 1_000, 1_006, 1_007, 1_015, 1_016, 1_017, 4_000]
        var headers = HTTPHeaders()
        for (index, length) in lengths.enumerated() {
            headers.add(name: "X-\(index)", value: String(repeating: "a", count: length))
        }
        #expect(headers.count == lengths.count)
        for (index, length) in lengths.enumerated() {
            #expect(headers.first("x-\(index)") == String(repeating: "a", count: length))
        }
        var seen: [Int] = []
        headers.forEachField { _, value in seen.append(value.count) }
        #expect(seen == lengths)
    }

    @Test func withheldFieldsAreSeenOnlyByTheirOwnIteration() {
        func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
            Array(text.utf8).withUnsafeBytes(body)
        }
        var headers = HTTPHeaders()
        bytes("A") { name in bytes("1") { headers.add(name: name, value: $0) } }
        bytes("Connection") { name in bytes("close") { headers.addWithheld(name: name, value: $0) } }
        // A fold after a withheld field extends that field, not the last live one.
        bytes(", X-B") { headers.appendToLastValue($0) }
        bytes("B") { name in bytes("2") { headers.add(name: name, value: $0) } }
        bytes(" two") { headers.appendToLastValue($0) }
        #expect(headers.count == 2)
        #expect(headers == HTTPHeaders([("A", "1"), ("B", "2 two")]))
        #expect(!headers.contains("connection"))
        #expect(headers.map(\.name) == ["A", "B"])
        var withheld: [String] = []
        headers.forEachWithheldField { name, value in
            withheld.append(String(decoding: name, as: UTF8.self) + ": " + String(decoding: value, as: UTF8.self))
        }
        #expect(withheld == ["Connection: close, X-B"])
        headers.remove(name: "b")
        #expect(headers == HTTPHeaders([("A", "1")]))
        var after = 0
        headers.forEachWithheldField { _, _ in after += 1 }
        #expect(after == 1)
        #expect(headers.encodedSizeBound >= "A: 1\r\n".utf8.count)
    }

    @Test func removingLiveFieldsLeavesAWithheldLastFieldTheOneAFoldContinues() {
        func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
            Array(text.utf8).withUnsafeBytes(body)
        }
        for removed in [["a"], ["b"], ["a", "b"]] {
            var headers = HTTPHeaders([("A", "1"), ("B", "2")])
            bytes("W") { name in bytes("w") { headers.addWithheld(name: name, value: $0) } }
            for name in removed { headers.remove(name: name) }
            bytes(" more") { headers.appendToLastValue($0) }
            var seen: [String] = []
            headers.forEachFieldIncludingWithheld { name, value in
                seen.append(String(decoding: name, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            }
            let kept = [("A", "a"), ("B", "b")].filter { !removed.contains($0.1) }.map {
                "\($0.0)=\($0.0 == "A" ? 1 : 2)"
            }
            #expect(seen == kept + ["W=w more"], "\(removed)")
        }
        // With the last field added removed, a fold continues the last live one.
        var headers = HTTPHeaders([("A", "1"), ("B", "2")])
        headers.remove(name: "b")
        bytes(" more") { headers.appendToLastValue($0) }
        #expect(headers == HTTPHeaders([("A", "1 more")]))
    }
}
